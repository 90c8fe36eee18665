"""Budget alerts through the real app and a fake Slack: faults, restarts, and the buttons."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from typing import Any

from sqlalchemy import select

from bot.db.engine import session_scope
from bot.db.schema import AlertSilence, AuditLog, Budget, OutboxMessage
from bot.notify.delivery import deliver_pending
from bot.notify.outbox import HistoryLookup
from bot.slack.notifier import SlackNotifier
from bot.slack.render import SlackRenderer
from tests.support.alert_walk import days
from tests.support.budget_alerts import T0, click, cycle, seed_month
from tests.support.outbox import delivery_edge, let_time_pass, post_as_the_worker
from tests.support.slack_app import SlackHarness
from tests.support.slack_requests import posted_button_click, view_submission


def posted_keys(slack: SlackHarness) -> list[str]:
    """Return the outbox key of every message the fake Slack accepted."""
    return [
        m["metadata"]["event_payload"]["key"]
        for m in slack.fake.messages.values()
        if m.get("metadata")
    ]


def outbox(slack: SlackHarness) -> dict[str, OutboxMessage]:
    with session_scope(slack.session_factory) as session:
        return {m.dedupe_key: m for m in session.scalars(select(OutboxMessage))}


def test_429_and_500_delay_delivery_but_every_alert_posts_exactly_once(
    slack: SlackHarness, retry_waits: list[float]
) -> None:
    seed_month(slack)
    slack.fake.fail("chat.postMessage", 429, times=2, retry_after=1)
    before = dt.datetime.now(dt.UTC)
    first = cycle(slack, T0)
    assert first.queued == 5 and first.delivery is not None
    assert first.delivery.delivered == [] and len(first.delivery.failed) == 1  # round stopped
    waiting = [m for m in outbox(slack).values() if m.last_error]
    assert len(waiting) == 1 and "429" in (waiting[0].last_error or "")
    due = waiting[0].next_attempt_at  # Retry-After honoured, by the database's clock
    assert due is not None and before + dt.timedelta(seconds=1) <= due

    slack.fake.fail("chat.postMessage", 500, times=2)
    let_time_pass(slack.session_factory, dt.timedelta(seconds=5))
    second = cycle(slack, T0 + dt.timedelta(seconds=5))
    assert second.queued == 0 and second.delivery and len(second.delivery.failed) == 1
    let_time_pass(slack.session_factory, dt.timedelta(minutes=5))
    third = cycle(slack, T0 + dt.timedelta(minutes=5))
    assert third.delivery and third.delivery.failed and not third.delivery.delivered
    assert posted_keys(slack) == []

    let_time_pass(slack.session_factory, dt.timedelta(hours=1))
    recovered = cycle(slack, T0 + dt.timedelta(hours=1))
    assert recovered.delivery and len(recovered.delivery.delivered) == 5
    again = cycle(slack, T0 + dt.timedelta(hours=2))
    assert again.queued == 0 and again.delivery and again.delivery.delivered == []
    keys = posted_keys(slack)
    assert len(keys) == 5 and Counter(keys).most_common(1)[0][1] == 1
    assert {m.status for m in outbox(slack).values()} == {"delivered"}
    assert (
        len(slack.fake.calls_to("chat.postMessage")) == 5 + 2 + 2
    )  # two 429s (one retried by the client), two 500s
    assert len(retry_waits) == 1 and 1 <= retry_waits[0] < 2  # the client waited Retry-After


def test_a_post_that_reached_slack_before_a_crash_is_not_sent_again(slack: SlackHarness) -> None:
    seed_month(slack)
    cycle(slack, T0, checks=("budgets",), edge=None)
    queued = outbox(slack)
    key = "budget:model:alpha:2026-11:actual:50"
    message = queued[key]
    # The worker posts, then dies before recording it: the row stays `sending` under its lease.
    post_as_the_worker(slack.services.client, message)
    with session_scope(slack.session_factory) as session:
        row = session.get(OutboxMessage, message.id)
        assert row is not None
        row.status, row.attempts, row.next_attempt_at = "sending", 1, T0 + dt.timedelta(minutes=2)
    client = slack.services.client
    report = deliver_pending(
        session_factory=slack.session_factory,
        edge=delivery_edge(
            SlackNotifier(client), renderer=SlackRenderer(), find_posted=HistoryLookup(client)
        ),
        now=T0 + dt.timedelta(minutes=3),
    )
    assert report.recovered == [key] and key in report.delivered
    assert Counter(posted_keys(slack))[key] == 1
    assert len(posted_keys(slack)) == len(queued)


def test_an_acknowledgement_is_kept_when_the_alert_cannot_be_updated(slack: SlackHarness) -> None:
    seed_month(slack)
    cycle(slack, T0)
    alpha = "budget:model:alpha:2026-11:actual:50"
    slack.fake.fail("chat.update", 500, times=1)
    click(slack, alpha, "budget_ack", "U0AAA111")
    told = slack.fake.wait_for("chat.postEphemeral")[0].params
    assert told["user"] == "U0AAA111"
    assert "Acknowledged by <@U0AAA111>" in told["text"] and "could not be updated" in told["text"]
    with session_scope(slack.session_factory) as session:
        kinds = [(s.budget_scope, s.kind) for s in session.scalars(select(AlertSilence))]
    assert kinds == [("model:alpha", "ack")]


def test_snooze_and_acknowledge_stop_repeats_and_are_recorded(slack: SlackHarness) -> None:
    seed_month(slack)
    cycle(slack, T0)
    alpha, platform = (
        "budget:model:alpha:2026-11:actual:50",
        "budget:team:platform:2026-11:forecast:100",
    )
    assert {alpha, platform} <= set(posted_keys(slack))

    click(slack, alpha, "budget_ack", "U0STRANGER")
    refusal = slack.responses(1)[0]  # the clicker's response_url: only they see it
    click(slack, alpha, "budget_ack", "U0AAA111")
    click(slack, platform, "budget_snooze", "U0PPP111")
    updates = slack.fake.wait_for("chat.update", 2)
    notes = [str(u.params["blocks"]) for u in updates]
    assert any("Acknowledged by <@U0AAA111> on 2026-11-20 12:00 UTC" in n for n in notes)
    assert any("Snoozed by <@U0PPP111> until 2026-11-27 12:00 UTC" in n for n in notes)
    assert all("budget_alert_actions" not in n for n in notes)  # buttons replaced by the note
    assert refusal["response_type"] == "ephemeral" and refusal["replace_original"] is False
    assert "Only the owners" in refusal["text"]
    with session_scope(slack.session_factory) as session:
        silences = [
            (s.budget_scope, s.kind, s.user_id, s.at, s.until)
            for s in session.scalars(select(AlertSilence).order_by(AlertSilence.id))
        ]
        audit = [
            (a.actor, a.action, a.target)
            for a in session.scalars(
                select(AuditLog).where(AuditLog.action.like("budget.%")).order_by(AuditLog.id)
            )
        ]
    clicked = dt.datetime(2026, 11, 20, 12, tzinfo=dt.UTC)
    assert silences == [
        ("model:alpha", "ack", "U0AAA111", clicked, None),
        ("team:platform", "snooze", "U0PPP111", clicked, clicked + dt.timedelta(days=7)),
    ]
    assert audit == [
        ("U0AAA111", "budget.acknowledge", "model:alpha"),
        ("U0PPP111", "budget.snooze", "team:platform"),
    ]

    posted_on: dict[int, list[str]] = {}
    for day in days(dt.date(2026, 11, 21), dt.date(2026, 12, 1)):
        before = set(posted_keys(slack))
        cycle(
            slack,
            dt.datetime.combine(day + dt.timedelta(days=1), dt.time(6), dt.UTC),
            checks=("budgets",),
        )
        new = sorted(set(posted_keys(slack)) - before)
        if new:
            posted_on[day.day] = new
    assert posted_on == {
        # alpha's 80 % (Nov 22) is acknowledged away; being exceeded still posts
        25: ["budget:model:alpha/stage:training:2026-11:actual:100"],
        # platform crossed 100 % on Nov 26 while snoozed; posted once the snooze ended
        27: ["budget:stage:storage:2026-11:actual:80", "budget:team:platform:2026-11:actual:100"],
        28: ["budget:model:alpha:2026-11:actual:100"],
    }


def test_raise_budget_opens_a_modal_for_owners_only_and_changes_the_budget(
    slack: SlackHarness,
) -> None:
    seed_month(slack)
    cycle(slack, T0)
    alpha = "budget:model:alpha:2026-11:actual:50"
    click(slack, alpha, "budget_raise", "U0PPP111")
    assert "Only the owners" in slack.responses(1)[0]["text"]
    assert slack.fake.calls_to("views.open") == []
    click(slack, alpha, "budget_raise", "U0AAA111")
    view = slack.fake.wait_for("views.open")[0].params["view"]
    assert view["callback_id"] == "budget_raise_submit"
    assert view["blocks"][1]["element"]["initial_value"] == "3000"

    def submit(value: str) -> Any:
        return slack.action(view_submission(view, user="U0AAA111", block="amount", value=value))

    refused = submit("lots")
    assert refused.status == 200 and refused.json()["response_action"] == "errors"
    assert submit("4,500").status == 200
    thread = slack.fake.wait_for("chat.postMessage", len(posted_keys(slack)) + 1)[-1].params
    assert "set the monthly budget of `model:alpha` to $4,500" in thread["text"]
    assert thread["thread_ts"]
    with session_scope(slack.session_factory) as session:
        budget = session.scalars(select(Budget).where(Budget.scope == "model:alpha")).one()
        audit = session.scalars(select(AuditLog).where(AuditLog.action == "budget.set")).one()
    assert budget.monthly_amount == 4500 and budget.updated_by == "U0AAA111"
    assert audit.actor == "U0AAA111" and audit.detail["before"]["monthly"].startswith("3000")
    assert json.loads(view["private_metadata"]) == {"alert": alpha}  # the rest from the outbox


def test_the_raise_modal_shows_the_budget_in_its_own_currency(slack: SlackHarness) -> None:
    seed_month(slack)
    cycle(slack, T0)
    with session_scope(slack.session_factory) as session:
        alpha = session.scalars(
            select(Budget).where(Budget.model_name == "alpha", Budget.stage.is_(None))
        ).one()
        alpha.currency = "EUR"  # as a registry budget with `currency: EUR` is
    click(slack, "budget:model:alpha:2026-11:actual:50", "budget_raise", "U0AAA111")
    view = slack.fake.wait_for("views.open")[0].params["view"]
    shown = json.dumps(view, ensure_ascii=False)
    assert "€3,000" in shown and "$3,000" not in shown


def forged_click(slack: SlackHarness, key: str, action_id: str, user: str, **forged: str) -> None:
    """Click a posted alert's button with its value's fields changed (signed all the same)."""
    channel, message = next(
        (c, m)
        for (c, _), m in slack.fake.messages.items()
        if (m.get("metadata") or {}).get("event_payload", {}).get("key") == key
    )
    payload = posted_button_click(
        channel,
        message,
        user=user,
        action_id=action_id,
        block_id="budget_alert_actions",
        response_url=f"{slack.fake.url}respond/click",
    )
    action = payload["actions"][0]
    action["value"] = json.dumps({**json.loads(action["value"]), **forged})
    assert slack.action(payload).status == 200
    slack.settle()


def test_a_forged_acknowledge_records_the_alerts_own_scope_and_period(
    slack: SlackHarness,
) -> None:
    seed_month(slack)
    cycle(slack, T0)
    alpha = "budget:model:alpha:2026-11:actual:50"
    # an admin may silence any budget: the forged scope would be accepted if it were believed
    forged_click(slack, alpha, "budget_ack", "U0ADMIN01", scope="team:platform", period="2025-01")
    platform = "budget:team:platform:2026-11:forecast:100"
    forged_click(slack, platform, "budget_snooze", "U0PPP111", period="2031-12")
    with session_scope(slack.session_factory) as session:
        silences = [
            (s.budget_scope, s.period, s.kind)
            for s in session.scalars(select(AlertSilence).order_by(AlertSilence.id))
        ]
        audit = [
            (a.target, a.detail["period"])
            for a in session.scalars(
                select(AuditLog).where(AuditLog.action.like("budget.%")).order_by(AuditLog.id)
            )
        ]
    assert silences == [("model:alpha", "2026-11", "ack"), ("team:platform", "2026-11", "snooze")]
    assert audit == [("model:alpha", "2026-11"), ("team:platform", "2026-11")]


def test_a_forged_raise_submission_changes_the_alerts_budget_and_replies_in_its_thread(
    slack: SlackHarness,
) -> None:
    seed_month(slack)
    cycle(slack, T0)
    alpha = "budget:model:alpha:2026-11:actual:50"
    click(slack, alpha, "budget_raise", "U0ADMIN01")
    view = slack.fake.wait_for("views.open")[0].params["view"]
    meta = json.loads(view["private_metadata"])
    forged = {**meta, "scope": "team:platform", "channel": "C0EVIL", "ts": "1.000001"}
    submitted = slack.action(
        view_submission(
            {**view, "private_metadata": json.dumps(forged)},
            user="U0ADMIN01",
            block="amount",
            value="4,500",
        )
    )
    assert submitted.status == 200
    slack.settle()
    with session_scope(slack.session_factory) as session:
        amounts = {s: a for s, a in session.execute(select(Budget.scope, Budget.monthly_amount))}
        posted = session.scalars(select(OutboxMessage).where(OutboxMessage.dedupe_key == alpha))
        row = posted.one()
    assert amounts["model:alpha"] == 4500 and amounts["team:platform"] != 4500
    notes = [
        c.params
        for c in slack.fake.calls_to("chat.postMessage")
        if "set the monthly budget" in str(c.params.get("text"))
    ]
    assert len(notes) == 1
    assert (notes[0]["channel"], notes[0]["thread_ts"]) == (row.slack_channel, row.slack_ts)
    assert "model:alpha" in notes[0]["text"]
