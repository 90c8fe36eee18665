"""`/mlcost budget set <scope> <amount> weekly` through signed requests: owners may, others may
not and change nothing, the board and App Home say the period, the change is audited."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.schema import AuditLog, Budget
from tests.slack.test_report_commands import all_text
from tests.support.alert_walk import add_spend, days, spend_row
from tests.support.sample_registry import load_registry
from tests.support.slack_app import SlackHarness, seed


def budgets(slack: SlackHarness) -> list[tuple[str, Decimal, str, int, list[int]]]:
    with slack.session_factory() as session:
        return [
            (b.scope, b.monthly_amount, b.period, b.amount_revision, list(b.thresholds))
            for b in session.scalars(select(Budget).order_by(Budget.scope))
        ]


def audits(slack: SlackHarness) -> list[AuditLog]:
    with slack.session_factory() as session:
        return list(session.scalars(select(AuditLog).where(AuditLog.action == "budget.set")))


def with_spend(session: Session) -> None:
    """The sample registry, and recsys spending $100 a day in November (to Nov 20)."""
    load_registry(session)
    add_spend(
        session,
        [
            spend_row(day, "recsys", "training", "ranking", "100")
            for day in days(dt.date(2026, 11, 1), dt.date(2026, 11, 21))
        ],
    )


def test_an_owner_makes_a_budget_weekly_and_the_channel_sees_it(slack: SlackHarness) -> None:
    seed(slack, with_spend)
    slack.command("budget set model:recsys $2,000 weekly", user="U0AAA111")
    reply = slack.responses(1)[0]
    assert reply["response_type"] == "in_channel"
    assert reply["text"] == (
        "<@U0AAA111> set the weekly budget of `model:recsys` to $2,000 / week "
        "(was $12,000 / month); alerts at 50 %, 80 %, 100 %."
    )
    assert budgets(slack) == [("model:recsys", Decimal(2000), "weekly", 1, [50, 80, 100])]
    [audit] = audits(slack)
    assert audit.actor == "U0AAA111"
    assert audit.detail["before"]["period"] == "monthly"
    assert Decimal(audit.detail["before"]["monthly"]) == 12000
    assert audit.detail["after"] == {
        "amount": "2000",
        "period": "weekly",
        "thresholds": [50, 80, 100],
    }

    # the board says the unit and the week, and counts the week so far (Mon 16 to Fri 20)
    slack.fake.calls.clear()
    slack.command("budget list", user="U0STRANGER")
    board = slack.responses(1)[0]
    text = str(board["blocks"])
    assert "$500 of $2,000 / week (week of Nov 16, 2026)" in text
    assert "*25 %*" in text
    slack.fake.calls.clear()
    slack.command("budget show recsys", user="U0STRANGER")
    shown = slack.responses(1)[0]
    fields = [f["text"] for b in shown["blocks"] for f in b.get("fields") or []]
    assert "*Weekly budget*\n*$2,000* / week" in fields
    assert any(f.startswith("*Spent (week of Nov 16, 2026, data through Nov 20)*") for f in fields)
    assert any(f.startswith("*Forecast to the week's end*") for f in fields)

    # an amount alone keeps the period
    slack.fake.calls.clear()
    slack.command("budget set recsys 2500", user="U0AAA111")
    assert slack.responses(1)[0]["text"].startswith(
        "<@U0AAA111> set the weekly budget of `model:recsys` to $2,500 / week (was $2,000 / week)"
    )
    assert budgets(slack)[0][1:4] == (Decimal(2500), "weekly", 2)


def test_a_non_owner_cannot_set_a_weekly_budget_and_nothing_changes(slack: SlackHarness) -> None:
    seed(slack, with_spend)
    before = budgets(slack)
    slack.command("budget set model:recsys 2000 weekly", user="U0STRANGER")
    slack.command("budget set stage:storage 100 daily", user="U0AAA111")
    replies = slack.responses(2)
    assert all(r["response_type"] == "ephemeral" for r in replies)
    assert sorted(r["text"] for r in replies) == [
        ":warning: Only an admin can change an organisation-wide stage budget.",
        ":warning: Only the owners of `recsys` or an admin can change its budget.",
    ]
    assert budgets(slack) == before
    assert audits(slack) == []


def test_an_unknown_period_is_refused_and_nothing_changes(slack: SlackHarness) -> None:
    seed(slack, with_spend)
    before = budgets(slack)
    for text, expected in [
        (
            "budget set model:recsys 2000 fortnightly",
            "'fortnightly' is not a budget period; use daily, weekly, monthly or quarterly",
        ),
        ("budget set model:recsys 2000 weekly extra", "Usage: `/mlcost budget set"),
    ]:
        slack.fake.calls.clear()
        slack.command(text, user="U0AAA111")
        reply = slack.responses(1)[0]
        assert reply["response_type"] == "ephemeral", text
        assert expected in reply["text"], (text, reply["text"])
    assert budgets(slack) == before
    assert audits(slack) == []


def test_app_home_shows_a_weekly_budget_with_its_week(slack: SlackHarness) -> None:
    seed(slack, with_spend)
    slack.command("budget set model:recsys 400 weekly", user="U0AAA111")
    slack.responses(1)
    assert slack.event({"type": "app_home_opened", "user": "U0AAA111", "tab": "home"}).status == 200
    call = slack.fake.wait_for("views.publish")[0]
    text = all_text(call.params["view"]["blocks"])
    # the month figures carry no monthly budget; the week's line says its week and its unit
    assert "Month to date *$2,000* · budget no budget" in text
    assert (
        "Weekly budget (week of Nov 16, 2026): *$500* of $400 / week · *125 %* · forecast $700"
        " :red_circle:"
    ) in text
