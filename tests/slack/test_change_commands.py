"""`/mlcost budget set` and `/mlcost owner set`: who may, what is audited, nothing half-changed."""

from __future__ import annotations

from decimal import Decimal

from sqlalchemy import select

from bot.db.schema import AuditLog, Budget, MLModel
from tests.support.sample_registry import load_registry
from tests.support.slack_app import SlackHarness, seed


def snapshot(
    slack: SlackHarness,
) -> tuple[list[tuple[str, Decimal, list[int]]], list[str], str | None, int]:
    """Return (budgets, recsys owners, recsys channel, audit rows)."""
    with slack.session_factory() as session:
        budgets = [
            (b.scope, b.monthly_amount, list(b.thresholds))
            for b in session.scalars(select(Budget).order_by(Budget.scope))
        ]
        model = session.scalars(select(MLModel).where(MLModel.name == "recsys")).one()
        owners = sorted(o.user_id for o in model.owners)
        audits = len(session.scalars(select(AuditLog)).all())
        return budgets, owners, model.channel, audits


def refusals(slack: SlackHarness, *commands: tuple[str, str]) -> list[str]:
    """Send (command, user) pairs; check all are refused privately, none changed a thing."""
    seed(slack, load_registry)
    before = snapshot(slack)
    for text, user in commands:
        slack.command(text, user=user)
    replies = slack.responses(len(commands))
    assert all(r["response_type"] == "ephemeral" for r in replies)
    assert snapshot(slack) == before
    return [r["text"] for r in replies]


def test_owner_sets_a_budget_and_the_channel_sees_it(slack: SlackHarness) -> None:
    seed(slack, load_registry)
    slack.command("budget set model:recsys $15,000 --alert 50,90,100", user="U0AAA111")
    reply = slack.responses(1)[0]
    assert reply["response_type"] == "in_channel"
    assert reply["text"] == (
        "<@U0AAA111> set the monthly budget of `model:recsys` to $15,000 "
        "(was $12,000); alerts at 50 %, 90 %, 100 %."
    )
    with slack.session_factory() as session:
        budget = session.scalars(select(Budget).where(Budget.scope == "model:recsys")).one()
        assert budget.monthly_amount == Decimal(15000)
        assert budget.thresholds == [50, 90, 100]
        assert budget.updated_by == "U0AAA111"
        audit = session.scalars(select(AuditLog).where(AuditLog.action == "budget.set")).one()
        assert audit.actor == "U0AAA111"
        assert audit.at is not None


def test_non_owner_budget_set_is_refused_and_nothing_changes(slack: SlackHarness) -> None:
    texts = refusals(
        slack,
        ("budget set model:recsys 1", "U0STRANGER"),
        ("budget set team:ranking 1", "U0STRANGER"),
        ("budget set stage:storage 1", "U0AAA111"),
    )
    assert sorted(texts) == [
        ":warning: Only an admin can change an organisation-wide stage budget.",
        ":warning: Only the owners of `recsys` or an admin can change its budget.",
        ":warning: Only the owners of team `ranking` or an admin can change its budget.",
    ]


def test_bad_budget_commands_are_specific(slack: SlackHarness) -> None:
    seed(slack, load_registry)
    before = snapshot(slack)
    for text, expected in [
        ("budget set model:recsys lots", "`lots` is not an amount; use digits"),
        ("budget set stage:gpu 100", "stage must be one of"),
        ("budget set model:recsys 100 --alert 50,eighty", "`--alert` takes percentages"),
        ("budget set model:recsy 100", "Did you mean `recsys`"),
        ("budget set model:recsys", "Usage: `/mlcost budget set &lt;scope&gt; &lt;amount&gt;"),
        ("budget frobnicate", "`budget frobnicate` is not a budget action"),
        ("budget set model:recsys 100 --colour red", "unknown option `--colour`"),
    ]:
        slack.fake.calls.clear()
        slack.command(text, user="U0ADMIN01")
        reply = slack.responses(1)[0]
        assert reply["response_type"] == "ephemeral", text
        assert expected in reply["text"], (text, reply["text"])
    assert snapshot(slack) == before


def test_owner_set_by_an_owner_replaces_owners_and_channel_audited(slack: SlackHarness) -> None:
    seed(slack, load_registry)
    slack.command(
        "owner set recsys <@U0AAA111|alice> <@U0NEW0001|bob> <#C0RECSYS1|recsys>", user="U0AAA111"
    )
    reply = slack.responses(1)[0]
    assert reply["response_type"] == "in_channel"
    assert "to <@U0AAA111>, <@U0NEW0001>" in reply["text"]
    _budgets, owners, channel, _audits = snapshot(slack)
    assert owners == ["U0AAA111", "U0NEW0001"]
    assert channel == "C0RECSYS1"
    with slack.session_factory() as session:
        audit = session.scalars(select(AuditLog).where(AuditLog.action == "model.owners.set")).one()
        assert audit.actor == "U0AAA111"
        assert audit.detail["owners"] == {
            "before": ["U0AAA111"],
            "after": ["U0AAA111", "U0NEW0001"],
        }


def test_non_owner_owner_set_is_refused_and_nothing_changes(slack: SlackHarness) -> None:
    texts = " | ".join(
        refusals(
            slack,
            ("owner set recsys <@U0STRANGER|me>", "U0STRANGER"),
            ("owner set recsys @alice", "U0AAA111"),
            ("owner set recsys <#C0X1234|a> <#C0Y1234|b> <@U0AAA111>", "U0AAA111"),
            ("owner set recsys", "U0AAA111"),
        )
    )
    assert "Only the current owners of `recsys` or an admin can change its owners." in texts
    assert "`@alice` is not a Slack user or channel" in texts
    assert "give at most one channel" in texts
    assert "Usage: `/mlcost owner set &lt;model&gt; &lt;@user&gt;" in texts


def test_admin_may_set_owners_of_any_model(slack: SlackHarness) -> None:
    seed(slack, load_registry)
    slack.command("owner set brightpath <@U0ADMIN01>", user="U0ADMIN01")
    assert slack.responses(1)[0]["response_type"] == "in_channel"
    with slack.session_factory() as session:
        model = session.scalars(select(MLModel).where(MLModel.name == "brightpath")).one()
        assert [o.user_id for o in model.owners] == ["U0ADMIN01"]
