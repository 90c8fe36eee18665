"""A whole monthly review through signed requests to the real app and the fake Slack Web API."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from bot.db.engine import session_scope
from bot.db.schema import AuditLog, OutboxMessage, Review, ReviewItem, SignOff
from bot.review.decisions import record_decision
from bot.review.signoff import enqueue_digests
from bot.slack.blocks.decision import build_decision_view
from bot.web.health import health_snapshot
from tests.support.economics_seed import REGISTRY, seed_review_month
from tests.support.fake_slack import Call, dm_channel
from tests.support.jobs import run_job
from tests.support.outbox import let_time_pass, post_as_the_worker
from tests.support.sample_registry import load_registry
from tests.support.slack_app import SlackHarness, seed
from tests.support.slack_requests import button_click, view_submission


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class Clock:
    """A clock tests move by hand."""

    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    """Tuesday 2026-12-01 09:00 UTC: the first working day after November."""
    return Clock(dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC))


def seed_org(session: Session) -> None:
    load_registry(session, REGISTRY)
    seed_review_month(session)


def posts(slack: SlackHarness) -> list[Call]:
    return slack.fake.calls_to("chat.postMessage")


def message(slack: SlackHarness, channel: str, ts: str) -> dict[str, Any]:
    return slack.fake.messages[(channel, ts)]


def find_post(slack: SlackHarness, needle: str) -> Call:
    found = [c for c in posts(slack) if needle in dumps(c.params)]
    assert len(found) == 1, f"{needle!r} in {len(found)} posts"
    return found[0]


def button_payload(
    slack: SlackHarness, user: str, post: Call, action_id: str, value: str
) -> dict[str, Any]:
    channel = dm_channel(post.params["channel"])  # a post to a user ID lands in their DM
    ts = next(
        ts
        for (ch, ts), m in slack.fake.messages.items()
        if ch == channel and m["text"] == post.params["text"]
    )
    stored = message(slack, channel, ts)
    return button_click(
        user=user,
        action_id=action_id,
        value=value,
        channel=channel,
        message_ts=ts,
        message_text=stored["text"],
        message_blocks=stored["blocks"],
        response_url=f"{slack.fake.url}respond/act-{time.time_ns()}",
    )


def item_id(slack: SlackHarness, model: str) -> int:
    with session_scope(slack.session_factory) as session:
        return session.scalars(select(ReviewItem.id).where(ReviewItem.model_name == model)).one()


def submit_payload(view: dict[str, Any], user: str, reason: str | None) -> dict[str, Any]:
    return view_submission(view, user=user, block="reason", value=reason)


def decide(
    slack: SlackHarness, user: str, model: str, decision: str, reason: str | None = None
) -> None:
    """Click a decision button as the user, then submit the modal it opens."""
    opened = len(slack.fake.calls_to("views.open"))
    post = find_post(slack, f'"{model}: ')
    payload = button_payload(
        slack, user, post, f"review_decide_{decision}", str(item_id(slack, model))
    )
    assert slack.action(payload).status == 200
    view = slack.fake.wait_for("views.open", opened + 1)[-1].params["view"]
    result = slack.action(submit_payload(view, user, reason))
    assert result.status == 200 and not result.body


def wait_until(slack: SlackHarness, check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until `check()` holds, re-checking whenever the fake Slack answers a call."""
    assert slack.fake.wait_until(check, timeout), "condition not met in time"


def test_a_whole_review(slack: SlackHarness, clock: Clock, second_app: SlackHarness) -> None:
    seed(slack, seed_org)

    # post: an admin asks for November's review
    assert slack.command("review 2026-11", user="U0ADMIN01").status == 200
    reply = slack.responses(1)[0]
    assert "ranking in <#C0RANKING>: posted now, 0 of 2 decided" in reply["text"]
    assert "risk in <#C0RISK>: posted now, 0 of 1 decided" in reply["text"]
    parent = find_post(slack, "Monthly cost review · ranking · November 2026")
    parent_ts = next(
        ts
        for (ch, ts), m in slack.fake.messages.items()
        if ch == "C0RANKING" and m["thread_ts"] is None
    )
    parent_text = dumps(parent.params["blocks"])
    assert "*2 models* cost *$1,950*" in parent_text and "Decided 0 of 2" in parent_text
    recsys = find_post(slack, '"recsys: ')
    assert recsys.params["thread_ts"] == parent_ts and recsys.params["channel"] == "C0RANKING"
    recsys_blocks = dumps(recsys.params["blocks"])
    assert "Cost incident" in recsys_blocks and "*$1.50*" in recsys_blocks
    assert "was $1.00, +50 %" in recsys_blocks and "75 % of $2,000" in recsys_blocks
    actions = next(b for b in recsys.params["blocks"] if b["type"] == "actions")
    labels = [e["text"]["text"] for e in actions["elements"]]
    assert labels == ["Keep", "Kill", "Right-size", "Needs discussion"]
    assert "Cost with no value" in dumps(find_post(slack, '"churn: ').params["blocks"])
    uploads = slack.fake.wait_for("files.completeUploadExternal", 2)
    assert {u.params.get("thread_ts") for u in uploads} >= {parent_ts}
    assert len(posts(slack)) == 5  # 2 parents + 3 models

    # refusal: the owner of another model cannot decide recsys, and nothing changes
    refusal = button_payload(
        slack, "U0AAA113", recsys, "review_decide_kill", str(item_id(slack, "recsys"))
    )
    assert slack.action(refusal).status == 200
    answer = slack.responses(2)[-1]
    assert answer["response_type"] == "ephemeral"
    assert "Only the owners of `recsys` (<@U0AAA111> <@U0AAA112>) or an admin" in answer["text"]
    assert not slack.fake.calls_to("views.open") and not slack.fake.calls_to("chat.update")

    # decide by an owner: the modal, then the message is updated in place
    decide(slack, "U0AAA111", "recsys", "kill", "training spend doubled, no lift")
    updates = slack.fake.wait_for("chat.update", 2)
    recsys_ts = next(
        ts
        for (ch, ts), m in slack.fake.messages.items()
        if ch == "C0RANKING" and (m["text"] or "").startswith("recsys:")
    )
    assert {u.params["ts"] for u in updates} == {recsys_ts, parent_ts}
    shown = dumps(message(slack, "C0RANKING", recsys_ts)["blocks"])
    assert "*Kill* — decided by <@U0AAA111> on 2026-12-01 09:00 UTC" in shown
    assert "training spend doubled, no lift" in shown
    assert "Decided 1 of 2" in dumps(message(slack, "C0RANKING", parent_ts)["blocks"])
    assert len(posts(slack)) == 5  # updated in place, nothing new posted

    # reminder: once, in the thread, after N days, naming the undecided model's owner
    clock.now += dt.timedelta(days=2)
    run_job(slack.services, "review-reminders")
    assert len(posts(slack)) == 5
    clock.now += dt.timedelta(days=2)
    run_job(slack.services, "review-reminders")
    run_job(slack.services, "review-reminders")
    reminder = find_post(slack, "undecided after 3 days: search")
    assert reminder.params["thread_ts"] == parent_ts
    assert "search" in reminder.params["text"] and "<@U0AAA113>" in dumps(reminder.params["blocks"])
    assert "recsys" not in dumps(reminder.params["blocks"])
    assert len(posts(slack)) == 7  # one reminder per review thread (ranking and risk)

    # restart: a new app instance on the same database sees the review and records decisions
    decide(second_app, "U0AAA113", "search", "keep")
    second_app.settle()  # the submission's listener has updated the thread
    assert "All decided" in dumps(message(slack, "C0RANKING", parent_ts)["blocks"])
    summary = dumps(message(slack, "C0RANKING", parent_ts)["blocks"])
    assert "kept 1, killed 1 (recsys: saves about *$1,500* a month once stopped)" in summary

    # never double-posted: the job, the command and the reminders find everything posted
    clock.now = dt.datetime(2026, 12, 2, 9, tzinfo=dt.UTC)
    run_job(second_app.services, "monthly-review")
    run_job(second_app.services, "review-reminders")
    assert second_app.command("review 2026-11", user="U0ADMIN01").status == 200
    wait_until(
        slack,
        lambda: any(
            "already posted, 2 of 2 decided" in c.params.get("text", "")
            for c in slack.fake.calls
            if c.method.startswith("respond/")
        ),
    )
    assert len(posts(slack)) == 7
    assert len(slack.fake.calls_to("files.completeUploadExternal")) == 2

    with session_scope(slack.session_factory) as session:
        items = {i.model_name: i for i in session.scalars(select(ReviewItem))}
        assert (items["recsys"].decision, items["recsys"].decided_by) == ("kill", "U0AAA111")
        assert items["search"].decision == "keep" and items["churn"].decision is None
        ranking = session.scalars(select(Review).where(Review.team_name == "ranking")).one()
        assert ranking.status == "decided" and ranking.parent_ts == parent_ts
        audit = session.scalars(select(AuditLog).where(AuditLog.action == "review.decide")).all()
        assert [(a.actor, a.detail["decision"]) for a in audit] == [
            ("U0AAA111", "kill"),
            ("U0AAA113", "keep"),
        ]
        statuses = set(session.scalars(select(OutboxMessage.status)))
        assert statuses == {"delivered"}


def test_the_monthly_job_posts_only_from_the_first_working_day(
    slack: SlackHarness, clock: Clock
) -> None:
    seed(slack, seed_org)
    clock.now = dt.datetime(2026, 11, 30, 9, tzinfo=dt.UTC)
    assert run_job(slack.services, "monthly-review") is None
    clock.now = dt.datetime(2026, 12, 1, 9, tzinfo=dt.UTC)
    report = run_job(slack.services, "monthly-review")
    assert report is not None and len(report.opened) == 2 and len(report.delivered) == 5
    again = run_job(slack.services, "monthly-review")
    assert again is not None and not again.opened and not again.delivered
    assert len(posts(slack)) == 5


def test_a_first_start_does_not_join_a_review_round_already_under_way(
    slack: SlackHarness,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    seed(slack, seed_org)  # a database that never had a review
    clock.now = dt.datetime(2026, 12, 2, 9, tzinfo=dt.UTC)  # the round began Tuesday, Dec 1
    caplog.set_level("INFO", logger="bot.review.jobs")
    assert run_job(slack.services, "monthly-review") is None
    assert posts(slack) == []
    assert "monthly review of 2026-11 held: its round began 2026-12-01" in caplog.text
    assert "--catch-up or MLCOST_REVIEW_CATCH_UP=true posts it" in caplog.text
    with session_scope(slack.session_factory) as session:
        assert session.scalars(select(Review)).all() == []

    # the explicit choice: `mlcost serve --catch-up`
    monkeypatch.setattr(
        slack.services, "settings", slack.services.settings.replace(review_catch_up=True)
    )
    report = run_job(slack.services, "monthly-review")
    assert report is not None and len(report.opened) == 2 and len(posts(slack)) == 5


def test_a_restart_mid_round_catches_up_when_the_database_had_reviews(
    slack: SlackHarness, clock: Clock
) -> None:
    seed(slack, seed_org)
    with session_scope(slack.session_factory) as session:  # October's round ran here
        session.add(Review(month="2026-10", team_name="ranking", channel="C0RANKING"))
    clock.now = dt.datetime(2026, 12, 3, 9, tzinfo=dt.UTC)  # down on Dec 1 and 2
    report = run_job(slack.services, "monthly-review")
    assert report is not None and len(report.opened) == 2 and len(posts(slack)) == 5


def test_the_startup_line_says_what_a_leader_runs_first(
    slack: SlackHarness, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.bootstrap import scheduled_jobs
    from bot.notify.scheduler import describe_first_runs

    seed(slack, seed_org)
    clock.now = dt.datetime(2026, 12, 2, 9, tzinfo=dt.UTC)
    first = describe_first_runs(scheduled_jobs(slack.services))
    assert first == (
        "poll (no MLCOST_POLL_SOURCES, so nothing re-read; budget alerts and the weekly "
        "unallocated and waste posts; then every 6 h), anomaly check of 2026-12-01, "
        "monthly review of 2026-11 held: its round began 2026-12-01, before this database had "
        "any review (--catch-up or MLCOST_REVIEW_CATCH_UP=true posts it), "
        "weekly sign-off DMs for the week of 2026-11-23 (once per owner)"
    )
    clock.now = dt.datetime(2026, 12, 9, 9, tzinfo=dt.UTC)
    monkeypatch.setattr(
        slack.services,
        "settings",
        slack.services.settings.replace(poll_sources="cost-explorer,cur:s3://b/p/"),
    )
    first = describe_first_runs(scheduled_jobs(slack.services))
    assert first.startswith("poll (re-reads cost-explorer, cur; ")
    assert "no monthly review today" in first


def test_a_failed_post_is_retried_by_the_next_run_not_doubled(
    slack: SlackHarness, clock: Clock
) -> None:
    seed(slack, seed_org)
    slack.fake.fail("chat.postMessage", 500, times=1)
    first = run_job(slack.services, "monthly-review")
    assert first is not None and first.failed
    clock.now += dt.timedelta(hours=2)
    let_time_pass(slack.session_factory, dt.timedelta(hours=2))  # the retry is due
    run_job(slack.services, "review-reminders")  # retries pending review posts
    texts = [c.params["text"] for c in posts(slack)]
    assert len(set(texts)) == 5
    with session_scope(slack.session_factory) as session:
        assert all(i.message_ts for i in session.scalars(select(ReviewItem)))


def test_a_decision_whose_thread_update_failed_is_shown_by_the_refresh_job(
    slack: SlackHarness, clock: Clock
) -> None:
    seed(slack, seed_org)
    assert slack.command("review 2026-11", user="U0ADMIN01").status == 200
    slack.responses(1)  # posted
    slack.fake.fail("chat.update", 500, times=1)
    decide(slack, "U0AAA111", "recsys", "kill", "no lift")
    slack.fake.wait_for("chat.update", 1)
    # the listener that got the 500 goes on to flag the item and bump the review's version:
    # a refresh job run before it has finished sees the version move and refreshes nothing
    slack.settle()
    recsys_ts = next(
        ts
        for (ch, ts), m in slack.fake.messages.items()
        if ch == "C0RANKING" and (m["text"] or "").startswith("recsys:")
    )
    assert "decided by" not in dumps(message(slack, "C0RANKING", recsys_ts)["blocks"])

    def pending() -> bool:
        with session_scope(slack.session_factory) as session:
            item = session.scalars(
                select(ReviewItem).where(ReviewItem.model_name == "recsys")
            ).one()
            assert item.decision == "kill"  # the decision was kept
            return item.refresh_pending

    assert pending()
    assert run_job(slack.services, "review-refresh") == 1
    shown = dumps(message(slack, "C0RANKING", recsys_ts)["blocks"])
    assert "*Kill* — decided by <@U0AAA111>" in shown and "no lift" in shown
    assert not pending()
    updates = len(slack.fake.calls_to("chat.update"))
    assert run_job(slack.services, "review-refresh") == 0
    assert len(slack.fake.calls_to("chat.update")) == updates  # nothing left to refresh


def test_a_digest_that_reached_slack_before_a_crash_is_not_sent_again(
    slack: SlackHarness, clock: Clock
) -> None:
    seed(slack, seed_org)
    clock.now = dt.datetime(2026, 11, 30, 9, tzinfo=dt.UTC)  # a Monday
    with session_scope(slack.session_factory) as session:
        assert (
            enqueue_digests(
                session=session, week_start=dt.date(2026, 11, 23), currency="USD", now=clock.now
            )
            == 4
        )
    with session_scope(slack.session_factory) as session:
        row = session.scalars(
            select(OutboxMessage).where(OutboxMessage.channel == "U0AAA111")
        ).one()
        key = row.dedupe_key
        # the worker posted to the owner's DM, then died before recording it
        post_as_the_worker(slack.services.client, row)
        row.status, row.attempts = "sending", 1
        row.next_attempt_at = clock.now + dt.timedelta(minutes=2)
    clock.now += dt.timedelta(minutes=5)
    assert (
        run_job(slack.services, "weekly-signoff") == 0
    )  # nothing new to queue, the rest delivered
    to_owner = [c for c in posts(slack) if c.params["channel"] == "U0AAA111"]
    assert len(to_owner) == 1  # found in the DM's history, not posted again
    assert slack.fake.calls_to("conversations.open")[0].params["users"] == "U0AAA111"
    assert len(posts(slack)) == 4
    with session_scope(slack.session_factory) as session:
        rows = session.scalars(select(OutboxMessage)).all()
        assert {r.status for r in rows} == {"delivered"}
        recovered = next(r for r in rows if r.dedupe_key == key)
        assert recovered.slack_channel == "D0AAA111"


def test_weekly_signoff_digest_and_button(slack: SlackHarness, clock: Clock) -> None:
    seed(slack, seed_org)
    clock.now = dt.datetime(2026, 11, 30, 9, tzinfo=dt.UTC)  # a Monday
    assert run_job(slack.services, "weekly-signoff") == 4  # recsys x2 owners, search, churn
    assert run_job(slack.services, "weekly-signoff") == 0
    digest = next(c for c in posts(slack) if c.params["channel"] == "U0AAA111")
    assert "Nov 23–29, 2026" in digest.params["text"]
    blocks = dumps(digest.params["blocks"])
    assert "*recsys*" in blocks and "Sign off" in blocks and "*search*" not in blocks

    stranger = button_payload(
        slack, "U0RRR111", digest, "signoff", dumps({"model": "recsys", "week": "2026-11-23"})
    )
    assert slack.action(stranger).status == 200
    assert "Only the owners of `recsys`" in slack.responses(1)[0]["text"]
    owner = button_payload(
        slack, "U0AAA112", digest, "signoff", dumps({"model": "recsys", "week": "2026-11-23"})
    )
    assert slack.action(owner).status == 200
    update = slack.fake.wait_for("chat.update", 1)[0]
    assert "signed off by <@U0AAA112>" in dumps(update.params["blocks"])
    with session_scope(slack.session_factory) as session:
        signoff = session.scalars(select(SignOff)).one()
        assert (signoff.model_name, signoff.week_start) == ("recsys", dt.date(2026, 11, 23))

    # the monthly review shows models not signed off every week
    clock.now = dt.datetime(2026, 12, 1, 9, tzinfo=dt.UTC)
    run_job(slack.services, "monthly-review")
    parent = find_post(slack, "Monthly cost review · ranking")
    assert "Not signed off every week: recsys, search" in dumps(parent.params["blocks"])
    recsys = find_post(slack, '"recsys: ')
    assert "1 of 4 weeks" in dumps(recsys.params["blocks"])


def test_value_and_gate_commands(slack: SlackHarness, clock: Clock) -> None:
    seed(slack, seed_org)
    assert (
        slack.command(
            "value recsys predictions 1.5m --date 2026-11-30 --revenue 120", user="U0AAA111"
        ).status
        == 200
    )
    assert "Recorded 1.5M predictions for `recsys` on 2026-11-30" in slack.responses(1)[0]["text"]
    assert slack.command("value recsys predictions 10", user="U0RRR111").status == 200
    assert "Only the owners of `recsys`" in slack.responses(2)[-1]["text"]
    assert slack.command("value recsys 2026-11").status == 200
    shown = dumps(slack.responses(3)[-1]["blocks"])
    assert "2.5M* predictions" in shown and "Cost incident" not in shown  # value rose 150 %
    assert slack.command("gate churn").status == 200
    gate = slack.responses(4)[-1]
    # churn cost $10 a day since October with no value: the review's "Cost with no value"
    assert "*churn* fails the release gate" in gate["text"]
    assert "recorded no value (record it with mlcost ingest value)" in gate["text"]
    assert slack.command("gate recsy").status == 200
    assert "Did you mean `recsys`" in slack.responses(5)[-1]["text"]


def test_a_thread_slack_refuses_fails_alone_in_the_refresh_job(
    slack: SlackHarness, clock: Clock
) -> None:
    seed(slack, seed_org)
    assert run_job(slack.services, "monthly-review") is not None
    # three decisions recorded while Slack could not be updated, oldest first
    with session_scope(slack.session_factory) as session:
        for minutes, (model, user) in enumerate(
            (("recsys", "U0AAA111"), ("search", "U0AAA113"), ("churn", "U0ADMIN01"))
        ):
            record_decision(
                session=session,
                item_id=item_id(slack, model),
                user_id=user,
                decision="keep",
                reason=None,
                now=clock.now + dt.timedelta(minutes=minutes),
            )
    with session_scope(slack.session_factory) as session:
        ts = {i.model_name: i.message_ts for i in session.scalars(select(ReviewItem))}
    refused: dict[str, list[str]] = {
        ts["recsys"]: ["msg_too_long"] * 9,  # permanent
        ts["search"]: ["internal_error"],
    }  # transient, once
    update_calls: list[str] = []

    def chat_update(params: dict[str, Any]) -> dict[str, Any]:
        update_calls.append(params["ts"])
        if refused.get(params["ts"]):
            return {"ok": False, "error": refused[params["ts"]].pop(0)}
        key = (params["channel"], params["ts"])
        slack.fake.messages[key].update({"text": params["text"], "blocks": params["blocks"]})
        return {"ok": True, "channel": key[0], "ts": key[1]}

    slack.fake.handlers["chat.update"] = chat_update

    def shown(model: str) -> str:
        return dumps(next(m for (_, t), m in slack.fake.messages.items() if t == ts[model]))

    def health() -> dict[str, Any]:
        with session_scope(slack.session_factory) as session:
            return health_snapshot(session, clock.now)

    assert run_job(slack.services, "review-refresh") == 1
    assert "decided by <@U0ADMIN01>" in shown("churn")  # refreshed despite the two before it
    assert "decided by" not in shown("search") and "decided by" not in shown("recsys")
    assert health()["review_threads_to_update"] == 1  # search waits; recsys is given up
    assert health()["review_threads_failed"] == 1
    assert run_job(slack.services, "review-refresh") == 1
    assert "decided by <@U0AAA113>" in shown("search")
    assert run_job(slack.services, "review-refresh") == 0
    assert update_calls.count(ts["recsys"]) == 1  # not retried run after run
    assert health()["review_threads_to_update"] == 0
    with session_scope(slack.session_factory) as session:
        recsys = session.scalars(select(ReviewItem).where(ReviewItem.model_name == "recsys")).one()
        assert recsys.decision == "keep" and not recsys.refresh_pending
        assert "msg_too_long" in (recsys.refresh_error or "")


def submit_together(
    slack: SlackHarness, submissions: list[tuple[dict[str, Any], str]]
) -> list[int]:
    """Submit decision modals from threads released at the same moment; return the statuses."""
    barrier = threading.Barrier(len(submissions))
    results: list[int] = []

    def submit(view: dict[str, Any], user: str) -> None:
        barrier.wait(timeout=10)
        results.append(slack.action(submit_payload(view, user, None)).status)

    threads = [threading.Thread(target=submit, args=pair) for pair in submissions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def test_two_owners_submitting_at_the_same_moment_close_the_review(
    slack: SlackHarness, clock: Clock
) -> None:
    seed(slack, seed_org)
    assert run_job(slack.services, "monthly-review") is not None
    parent_ts = next(
        ts
        for (ch, ts), m in slack.fake.messages.items()
        if ch == "C0RANKING" and m["thread_ts"] is None
    )
    choices = (("recsys", "U0AAA111", "kill"), ("search", "U0AAA113", "keep"))
    views = [
        build_decision_view(item_id(slack, model), model, "2026-11", decision, "C0RANKING")
        for model, _, decision in choices
    ]
    for round_ in range(5):
        with session_scope(slack.session_factory) as session:  # the review as just posted
            session.execute(
                update(ReviewItem).values(
                    decision=None, decided_by=None, decided_at=None, refresh_pending=False
                )
            )
            session.execute(update(Review).values(status="open", closed_at=None))
        results = submit_together(
            slack, [(view, user) for view, (_, user, _) in zip(views, choices, strict=True)]
        )
        assert results == [200, 200]

        def refreshed() -> bool:
            with session_scope(slack.session_factory) as session:
                items = session.scalars(
                    select(ReviewItem).join(Review).where(Review.team_name == "ranking")
                ).all()
                return all(i.decision and not i.refresh_pending for i in items)

        slack.settle()  # both submissions' listeners have finished updating the thread
        assert refreshed()
        with session_scope(slack.session_factory) as session:
            ranking = session.scalars(select(Review).where(Review.team_name == "ranking")).one()
            assert ranking.status == "decided", f"round {round_}: the review stayed open"
        shown = dumps(message(slack, "C0RANKING", parent_ts)["blocks"])
        assert "All decided" in shown, f"round {round_}: {shown}"
