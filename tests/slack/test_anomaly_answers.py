"""Anomaly posts through the real app and a fake Slack: drivers, Expected / Not expected, once.

The alert walk's beta model runs a one-off $3,000 training instance (i-beta-big) on Nov 10:
beta's post goes to the ranking channel, the training stage's to FinOps.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import select

from bot.cli import main
from bot.db.engine import session_scope
from bot.db.schema import AnomalyExpectation, AuditLog, OutboxMessage
from tests.support.budget_alerts import cycle, seed_month
from tests.support.outbox import let_time_pass
from tests.support.slack_app import SlackHarness
from tests.support.slack_requests import posted_button_click

BETA = "anomaly:spend:model:beta:2026-11-10"
TRAINING = "anomaly:spend:stage:training:2026-11-10"
MORNING = dt.datetime(2026, 11, 11, 9, 15, tzinfo=dt.UTC)  # the anomaly check for Nov 10
CLICKED = dt.datetime(2026, 11, 20, 12, tzinfo=dt.UTC)  # the harness clock


def posted(slack: SlackHarness, key: str) -> tuple[str, dict[str, Any]]:
    """Return (channel, message) of the post with this outbox key, as Slack holds it now."""
    return next(
        (c, m)
        for (c, _), m in slack.fake.messages.items()
        if (m.get("metadata") or {}).get("event_payload", {}).get("key") == key
    )


def click_payload(slack: SlackHarness, key: str, action_id: str, user: str) -> dict[str, Any]:
    channel, message = posted(slack, key)
    return posted_button_click(
        channel,
        message,
        user=user,
        action_id=action_id,
        block_id="anomaly_actions",
        response_url=f"{slack.fake.url}respond/{user}",
    )


def click(slack: SlackHarness, key: str, action_id: str, user: str) -> None:
    assert slack.action(click_payload(slack, key, action_id, user)).status == 200
    slack.settle()


def answers(slack: SlackHarness) -> list[tuple[str, str, str, str | None, str | None]]:
    with session_scope(slack.session_factory) as session:
        return [
            (r.anomaly_key, r.answer, r.user_id, r.dimension, r.value)
            for r in session.scalars(select(AnomalyExpectation).order_by(AnomalyExpectation.id))
        ]


def audited(slack: SlackHarness) -> list[tuple[str, str, str]]:
    with session_scope(slack.session_factory) as session:
        return [
            (a.actor, a.action, a.target)
            for a in session.scalars(
                select(AuditLog).where(AuditLog.action.like("anomaly.%")).order_by(AuditLog.id)
            )
        ]


def block_text(blocks: Any) -> str:
    return json.dumps(
        blocks if not isinstance(blocks, str) else json.loads(blocks), ensure_ascii=False
    )


def test_posts_name_their_drivers_carry_the_buttons_and_survive_429_and_500(
    slack: SlackHarness, retry_waits: list[float]
) -> None:
    seed_month(slack)
    slack.fake.fail("chat.postMessage", 429, times=2, retry_after=1)
    cycle(slack, MORNING, checks=("anomalies",))
    slack.fake.fail("chat.postMessage", 500, times=1)
    for minutes in (5, 60, 120):
        let_time_pass(slack.session_factory, dt.timedelta(minutes=minutes))  # the retry is due
        cycle(slack, MORNING + dt.timedelta(minutes=minutes), checks=("anomalies",))
    keys = [
        m["metadata"]["event_payload"]["key"]
        for m in slack.fake.messages.values()
        if m.get("metadata")
    ]
    assert Counter(keys) == {BETA: 1, TRAINING: 1}  # each once, nothing lost
    with session_scope(slack.session_factory) as session:
        assert {m.status for m in session.scalars(select(OutboxMessage))} == {"delivered"}
    channel, beta = posted(slack, BETA)
    assert channel == "C0RANKING"
    body = block_text(beta["blocks"])
    # the new instance leads (its service carries the same $3,000 rise on top of $50 serving)
    assert "resource `i-beta-big`: $3,000 (usual $0.00, +$3,000)" in body
    assert "service `Amazon Elastic Compute Cloud`: $3,050 (usual $50.00, +$3,000)" in body
    assert (
        "Expected accepts resource `i-beta-big` up to $3,000 a day until the end of November"
        in body
    )
    buttons = next(b for b in beta["blocks"] if b.get("block_id") == "anomaly_actions")
    assert [e["text"]["text"] for e in buttons["elements"]] == ["Expected", "Not expected"]


def test_the_owner_answers_once_a_stranger_is_refused_and_the_audit_shows_it(
    slack: SlackHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_month(slack)
    cycle(slack, MORNING, checks=("anomalies",))
    before = posted(slack, BETA)[1]["blocks"]

    click(slack, BETA, "anomaly_expected", "U0PPP111")  # owns platform, not beta
    refusal = slack.responses(1)[0]
    assert refusal["response_type"] == "ephemeral"
    assert "Only the owners of beta (<@U0AAA111> <@U0BBB111>) or an admin" in refusal["text"]
    assert "Nothing was changed" in refusal["text"]
    assert slack.fake.calls_to("chat.update") == [] and answers(slack) == []
    assert posted(slack, BETA)[1]["blocks"] == before

    # a double click: two requests for the same button, handled at the same time
    first = click_payload(slack, BETA, "anomaly_expected", "U0BBB111")
    second = click_payload(slack, BETA, "anomaly_expected", "U0BBB111")
    assert slack.action(first).status == 200 and slack.action(second).status == 200
    slack.settle()
    # and an admin answering the other way afterwards, from a copy of the post still showing
    # the buttons (a client that had not refreshed)
    late = posted_button_click(
        "C0RANKING",
        {
            "ts": posted(slack, BETA)[1].get("ts") or first["message"]["ts"],
            "text": "x",
            "blocks": before,
        },
        user="U0ADMIN01",
        action_id="anomaly_not_expected",
        block_id="anomaly_actions",
        response_url=f"{slack.fake.url}respond/admin",
    )
    assert slack.action(late).status == 200
    slack.settle()

    assert answers(slack) == [(BETA, "expected", "U0BBB111", "resource_id", "i-beta-big")]
    assert audited(slack) == [("U0BBB111", "anomaly.expected", "model:beta")]
    told = [c.params for c in slack.fake.calls_to("chat.postEphemeral")]
    assert {t["user"] for t in told} == {"U0BBB111", "U0ADMIN01"}
    assert all("already answered by <@U0BBB111>; nothing was changed" in t["text"] for t in told)
    note = block_text(posted(slack, BETA)[1]["blocks"])
    assert (
        "Expected, said <@U0BBB111> on 2026-11-20 12:00 UTC: resource `i-beta-big` up to "
        "$3,000 a day does not alert again for `model:beta` until the end of November."
    ) in note
    assert "anomaly_actions" not in note  # the buttons are replaced by who answered

    url = slack.services.settings.database_url
    capsys.readouterr()
    assert main(["--database-url", url, "audit", "--subject", "beta", "--format", "json"]) == 0
    entries = [e for e in json.loads(capsys.readouterr().out) if e["action"].startswith("anomaly")]
    assert len(entries) == 1
    entry = entries[0]
    assert (entry["actor"], entry["subject"], entry["at"]) == (
        "U0BBB111",
        "model:beta",
        CLICKED.isoformat(),
    )
    assert entry["before"] is None
    assert entry["after"] == {
        "answer": "expected",
        "driver": "resource_id=i-beta-big",
        "up_to": entry["after"]["up_to"],
        "month": "2026-11",
    }
    assert float(entry["after"]["up_to"]) == 3000  # the driver's spend that day
    assert entry["detail"]["anomaly"] == BETA
    assert main(["--database-url", url, "audit", "--subject", "beta"]) == 0
    table = capsys.readouterr().out
    assert "anomaly.expected" in table and "U0BBB111" in table


def test_a_stage_anomaly_is_answered_by_admins_only(slack: SlackHarness) -> None:
    seed_month(slack)
    cycle(slack, MORNING, checks=("anomalies",))
    click(slack, TRAINING, "anomaly_not_expected", "U0AAA111")  # a team owner, not an admin
    assert (
        "Only an admin can answer an organisation-wide stage anomaly"
        in slack.responses(1)[0]["text"]
    )
    assert answers(slack) == []
    click(slack, TRAINING, "anomaly_not_expected", "U0ADMIN01")
    assert answers(slack) == [(TRAINING, "not_expected", "U0ADMIN01", "resource_id", "i-beta-big")]
    assert audited(slack) == [("U0ADMIN01", "anomaly.not_expected", "stage:training")]
    note = block_text(posted(slack, TRAINING)[1]["blocks"])
    assert (
        "Not expected, said <@U0ADMIN01> on 2026-11-20 12:00 UTC: this anomaly stays open." in note
    )


def test_an_answer_is_kept_when_the_post_cannot_be_updated(slack: SlackHarness) -> None:
    seed_month(slack)
    cycle(slack, MORNING, checks=("anomalies",))
    slack.fake.fail("chat.update", 500, times=1)
    click(slack, BETA, "anomaly_not_expected", "U0BBB111")
    assert answers(slack) == [(BETA, "not_expected", "U0BBB111", "resource_id", "i-beta-big")]
    told = slack.fake.wait_for("chat.postEphemeral")[0].params
    assert told["user"] == "U0BBB111" and "could not be updated" in told["text"]
    assert "<@U0BBB111> please look into it" in told["text"]  # beta's owner is mentioned


GAMMA_GPU = "anomaly:gpu:model:gamma:2026-11-10"


def seed_gpu_runaway(slack: SlackHarness) -> None:
    """gamma's GPU box: 10 GPU-hours a day for four weeks, then 40 on Nov 10 at the same cost."""
    from tests.support.alert_walk import add_spend, seed_walk, spend_row

    seed_walk(slack.session_factory)
    rows = []
    for back in range(29):
        day = dt.date(2026, 11, 10) - dt.timedelta(days=back)
        hours = "40" if back == 0 else "10"
        rows.append(
            spend_row(
                day, "gamma", "training", "platform", "100", resource="i-gamma-gpu", gpu_hours=hours
            )
        )
    with session_scope(slack.session_factory) as session:
        add_spend(session, rows)


def test_a_gpu_anomaly_carries_the_buttons_and_its_owner_accepts_its_gpu_hours(
    slack: SlackHarness,
) -> None:
    seed_gpu_runaway(slack)
    cycle(slack, MORNING, checks=("anomalies",))
    channel, message = posted(slack, GAMMA_GPU)
    assert channel == "C0PLATFORM"
    assert "Expected accepts `model:gamma`'s GPU-hours up to 40.0 a day" in block_text(
        message["blocks"]
    )
    click(slack, GAMMA_GPU, "anomaly_expected", "U0AAA111")  # owns alpha, not gamma
    assert "Nothing was changed" in slack.responses(1)[0]["text"]
    assert answers(slack) == []
    click(slack, GAMMA_GPU, "anomaly_expected", "U0PPP111")  # gamma's owner
    assert answers(slack) == [(GAMMA_GPU, "expected", "U0PPP111", "gpu_hours", "gamma")]
    assert audited(slack) == [("U0PPP111", "anomaly.expected", "model:gamma")]
    note = block_text(posted(slack, GAMMA_GPU)[1]["blocks"])
    assert "GPU-hours of `model:gamma` up to 40.0 a day do not alert again" in note
    assert "anomaly_expected" not in note  # the buttons were replaced by the answer


def test_a_forged_expected_records_the_posted_amounts_not_the_payloads(
    slack: SlackHarness,
) -> None:
    seed_month(slack)
    cycle(slack, MORNING, checks=("anomalies",))
    payload = click_payload(slack, BETA, "anomaly_expected", "U0BBB111")
    action = payload["actions"][0]
    posted_value = json.loads(action["value"])
    action["value"] = json.dumps({**posted_value, "amount": "999999999", "excess": "0.01"})
    assert slack.action(payload).status == 200
    slack.settle()
    with session_scope(slack.session_factory) as session:
        row = session.scalars(select(AnomalyExpectation)).one()
        audit = session.scalars(select(AuditLog).where(AuditLog.action == "anomaly.expected")).one()
    assert row.amount == Decimal(posted_value["amount"])
    assert row.excess == Decimal(posted_value["excess"])
    assert audit.detail["amount"] == str(Decimal(posted_value["amount"]))
