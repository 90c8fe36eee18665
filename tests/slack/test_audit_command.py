"""`/mlcost audit <model|team>`: owners and admins see who changed what; others are told who can."""

from __future__ import annotations

from sqlalchemy.orm import Session

from bot.registry.spec import parse_registry
from bot.registry.sync import import_registry
from tests.support.audit_seed import seed_audit
from tests.support.slack_app import SlackHarness, seed


def reply_to(slack: SlackHarness, text: str, user: str) -> dict[str, object]:
    slack.fake.calls.clear()
    assert slack.command(text, user=user).status == 200
    reply = slack.responses(1)[0]
    assert reply["response_type"] == "ephemeral", text
    return reply


def section_texts(reply: dict[str, object]) -> str:
    blocks = reply["blocks"]
    assert isinstance(blocks, list)
    return "\n".join(
        b["text"]["text"] if b["type"] in ("section", "header") else b["elements"][0]["text"]
        for b in blocks
    )


def test_model_owner_sees_the_models_changes_newest_first(slack: SlackHarness) -> None:
    seed(slack, seed_audit)
    reply = reply_to(slack, "audit recsys", "U0AAA111")
    assert reply["text"] == "Audit trail for model recsys: 7 changes"
    body = section_texts(reply)
    assert body.index("review.decide") < body.index("waste_resource_keep")
    assert body.index("model.owners.set") < body.index("`budget.set`")
    assert "`2026-11-03 09:00` <@U0AAA111> `budget.set` `model:recsys`" in body
    assert "monthly=$12,000 → monthly=$15,000" in body
    assert "owners=[U0AAA111] → owners=[U0AAA111, U0NEW0001]" in body
    assert "team:platform" not in body and "registry.import" not in body
    # the registry import that created the model and its budget, one record each
    assert "`registry.model.create` `model:recsys`" in body
    assert "`registry.budget.create` `model:recsys`" in body


def test_since_narrows_and_admin_may_read_a_team(slack: SlackHarness) -> None:
    seed(slack, seed_audit)
    body = section_texts(reply_to(slack, "audit recsys --since 2026-11-10", "U0AAA111"))
    assert "budget.acknowledge" in body and "model.owners.set" not in body
    reply = reply_to(slack, "audit platform", "U0ADMIN01")
    assert reply["text"] == "Audit trail for team platform: 5 changes"
    assert "— → period=monthly, monthly=$5,000.50, thresholds=[50, 80, 100]" in section_texts(reply)


def test_non_owner_is_refused_and_told_who_can(slack: SlackHarness) -> None:
    seed(slack, seed_audit)
    reply = reply_to(slack, "audit recsys", "U0PPP111")
    assert reply["text"] == (
        ":warning: Only the owners of `recsys` (<@U0AAA111>, <@U0NEW0001>) or an admin "
        "can see its audit trail."
    )
    assert "blocks" not in reply or "budget.set" not in str(reply.get("blocks"))
    reply = reply_to(slack, "audit ranking", "U0STRANGER")
    assert reply["text"] == (
        ":warning: Only the owners of team `ranking` (<@U0AAA111>) or an admin "
        "can see its audit trail."
    )


def test_unknown_name_and_bad_input_are_specific(slack: SlackHarness) -> None:
    seed(slack, seed_audit)
    reply = reply_to(slack, "audit recsy", "U0ADMIN01")
    assert "No model or team named `recsy`. Did you mean `recsys`?" in str(reply["text"])
    reply = reply_to(slack, "audit recsys --since lastweek", "U0ADMIN01")
    assert "'lastweek' is not a date; use YYYY-MM-DD, today or yesterday" in str(reply["text"])
    reply = reply_to(slack, "audit", "U0ADMIN01")
    assert "Usage: `/mlcost audit &lt;model|team&gt;" in str(reply["text"])


def test_hostile_stored_text_is_escaped(slack: SlackHarness) -> None:
    seed(slack, seed_audit)
    raw = str(reply_to(slack, "audit recsys", "U0AAA111"))
    # the review decision's reason: `<!channel> & \`tick\` <https://x.example|click>`
    assert "&lt;!channel&gt; &amp; ˋtickˋ &lt;https://x.example|click&gt;" in raw
    assert "<!channel>" not in raw and "<https://" not in raw


def test_help_lists_audit(slack: SlackHarness) -> None:
    reply = reply_to(slack, "help", "U0AAA111")
    assert "/mlcost audit recsys --since 2026-11-01" in str(reply["blocks"])


def test_a_registry_import_shows_each_change_as_money(slack: SlackHarness) -> None:
    registry = (
        "teams:\n  - {name: search, channel: C0SEARCH, owners: [U0SSS111]}\n"
        "models:\n  - {name: embed, team: search, owners: [U0SSS111]}\n"
        'budgets:\n  - {scope: "model:embed", monthly: 95765}\n'
    )

    def two_imports(session: Session) -> None:
        import_registry(parse_registry(registry), session=session, actor="cli:alice")
        changed = registry.replace("95765", "75135")
        import_registry(parse_registry(changed), session=session, actor="cli:alice")

    seed(slack, two_imports)
    reply = reply_to(slack, "audit embed", "U0SSS111")
    assert reply["text"] == "Audit trail for model embed: 3 changes"
    body = section_texts(reply)
    assert "`registry.budget.update` `model:embed`\nmonthly=$95,765 → monthly=$75,135" in body
    assert "`registry.model.create`" in body and "`registry.budget.create`" in body
    assert "0000000000" not in body


def test_a_removed_models_trail_is_still_shown_to_an_admin(slack: SlackHarness) -> None:
    registry = (
        "teams:\n  - {name: search, channel: C0SEARCH, owners: [U0SSS111]}\n"
        "models:\n  - {name: embed, team: search, owners: [U0SSS111]}\n"
        "  - {name: rerank, team: search, owners: [U0SSS111]}\n"
        "admins: [U0ADM0001]\n"
    )

    def import_then_remove(session: Session) -> None:
        import_registry(parse_registry(registry), session=session, actor="cli:alice")
        without = registry.replace("  - {name: rerank, team: search, owners: [U0SSS111]}\n", "")
        import_registry(parse_registry(without), session=session, actor="cli:alice")

    seed(slack, import_then_remove)
    reply = reply_to(slack, "audit rerank", "U0ADM0001")
    body = section_texts(reply)
    assert "`registry.model.create` `model:rerank`" in body
    assert "`registry.model.remove` `model:rerank`" in body
    # its owners went with it: only an admin may read a removed model's trail
    refused = reply_to(slack, "audit rerank", "U0SSS111")
    assert "admin" in str(refused["text"]) and "registry.model" not in str(refused.get("blocks"))
