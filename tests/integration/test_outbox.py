"""The outbox: insert-if-absent, retries, permanent failures, one claim per message."""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import urllib.error
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from bot.config import Settings
from bot.db.engine import session_scope
from bot.notify.delivery import DeliveryReport, deliver_pending, outbox_timing
from bot.notify.outbox import FindPosted, enqueue
from bot.slack.errors import slack_error
from bot.slack.notifier import Posted
from tests.support.database import migrated
from tests.support.fake_notifier import FakeNotifier
from tests.support.outbox import BLOCKS, delivery_edge, outbox_rows, put, put_one

NOW = dt.datetime(2026, 11, 21, 6, tzinfo=dt.UTC)


def queue(factory: sessionmaker[Session], n: int) -> None:
    with session_scope(factory) as session:
        for i in range(n):
            put(session, f"k{i}", text=f"message {i}")


class SlackError(Exception):
    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.response = {"ok": False, "error": error}


def test_the_backoff_setting_sets_the_first_retrys_wait_and_it_doubles_up_to_an_hour(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLCOST_OUTBOX_BACKOFF_SECONDS", "5")
    timing = outbox_timing(Settings().delivery)
    with migrated(database_url) as (_engine, factory):
        queue(factory, 1)
        notifier = FakeNotifier(fail_next=12, error=urllib.error.URLError("connection refused"))
        now, waits = NOW, []
        for _ in range(12):
            report = deliver_pending(
                session_factory=factory, edge=delivery_edge(notifier), now=now, timing=timing
            )
            assert report.failed == ["k0"]
            due = outbox_rows(factory)["k0"].next_attempt_at
            assert due is not None
            waits.append((due - now).total_seconds())
            now = due
    assert waits[:4] == [10, 20, 40, 80]  # 5 s doubled from the first attempt on
    assert max(waits) == 640 and waits[-1] == 640  # 5 s x 2^7: the doubling stops there


def test_enqueue_is_insert_if_absent(database_url: str) -> None:
    with migrated(database_url) as (_engine, factory), session_scope(factory) as session:
        assert enqueue(
            session=session, dedupe_key="k", kind="t", channel="C1", text="a", blocks=BLOCKS
        )
        assert not enqueue(
            session=session, dedupe_key="k", kind="t", channel="C2", text="b", blocks=BLOCKS
        )


def test_network_error_stops_the_round_and_retries_later(database_url: str) -> None:
    with migrated(database_url) as (_engine, factory):
        queue(factory, 3)
        notifier = FakeNotifier(fail_next=1, error=urllib.error.URLError("connection refused"))
        report = deliver_pending(session_factory=factory, edge=delivery_edge(notifier), now=NOW)
        assert report.failed == ["k0"] and report.delivered == []
        k0 = outbox_rows(factory)["k0"]
        assert k0.status == "pending" and k0.attempts == 1
        assert k0.next_attempt_at == NOW + dt.timedelta(seconds=60)
        assert "URLError" in (k0.last_error or "")
        later = deliver_pending(
            session_factory=factory,
            edge=delivery_edge(notifier),
            now=NOW + dt.timedelta(seconds=30),
        )
        assert later.delivered == ["k1", "k2"]  # k0 is not due yet
        last = deliver_pending(
            session_factory=factory, edge=delivery_edge(notifier), now=NOW + dt.timedelta(minutes=2)
        )
        assert last.delivered == ["k0"] and len(notifier.posts) == 3


def test_permanent_errors_are_given_up_and_do_not_block_others(database_url: str) -> None:
    with migrated(database_url) as (_engine, factory):
        queue(factory, 2)
        notifier = FakeNotifier(fail_next=1, error=SlackError("channel_not_found"))
        report = deliver_pending(session_factory=factory, edge=delivery_edge(notifier), now=NOW)
        assert report.dead == ["k0"] and report.delivered == ["k1"]
        assert outbox_rows(factory)["k0"].status == "failed"
        assert (
            deliver_pending(
                session_factory=factory,
                edge=delivery_edge(notifier),
                now=NOW + dt.timedelta(days=1),
            ).delivered
            == []
        )


class SlowNotifier(FakeNotifier):
    def post(
        self, channel: str, text: str, blocks: list[dict[str, Any]], thread_ts: str | None = None
    ) -> Posted:
        time.sleep(0.01)
        return super().post(channel, text, blocks, thread_ts)


def test_concurrent_workers_never_post_a_message_twice(database_url: str) -> None:
    with migrated(database_url) as (_engine, factory):
        queue(factory, 30)
        notifier = SlowNotifier()
        workers = [
            threading.Thread(
                target=deliver_pending,
                kwargs={"session_factory": factory, "edge": delivery_edge(notifier), "now": NOW},
            )
            for _ in range(3)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        texts = [p["text"] for p in notifier.posts]
        assert len(texts) == 30 and len(set(texts)) == 30
        assert {m.status for m in outbox_rows(factory).values()} == {"delivered"}


def test_dead_parent_fails_its_replies_and_does_not_block_delivery(database_url: str) -> None:
    with migrated(database_url) as (_engine, factory):
        with session_scope(factory) as session:
            put(session, "parent", text="parent", channel="CGONE")
            for i in range(25):  # more than one claim window of replies under the dead parent
                put(session, f"reply{i}", text=f"reply {i}", channel="CGONE", thread_key="parent")
        notifier = FakeNotifier(fail_next=1, error=SlackError("is_archived"))
        report = deliver_pending(session_factory=factory, edge=delivery_edge(notifier), now=NOW)
        assert "parent" in report.dead and notifier.posts == []
        put_one(factory, "fresh", text="fresh")
        later = deliver_pending(
            session_factory=factory, edge=delivery_edge(notifier), now=NOW + dt.timedelta(hours=1)
        )
        assert later.delivered == ["fresh"]
        assert [p["text"] for p in notifier.posts] == ["fresh"]
        replies = [m for k, m in outbox_rows(factory).items() if k.startswith("reply")]
        assert len(replies) == 25 and {m.status for m in replies} == {"failed"}
        assert all(
            "parent" in (m.last_error or "") and "is_archived" in (m.last_error or "")
            for m in replies
        )


def test_replies_queued_after_their_parent_failed_fail_with_it(database_url: str) -> None:
    with migrated(database_url) as (_engine, factory):
        queue(factory, 1)
        notifier = FakeNotifier(fail_next=1, error=SlackError("channel_not_found"))
        assert deliver_pending(
            session_factory=factory, edge=delivery_edge(notifier), now=NOW
        ).dead == ["k0"]
        with session_scope(factory) as session:
            for i in range(22):
                put(session, f"late{i}", text=f"late {i}", thread_key="k0")
            put(session, "fresh", text="fresh")
        report = deliver_pending(session_factory=factory, edge=delivery_edge(notifier), now=NOW)
        assert report.delivered == ["fresh"] and len(report.dead) == 22
        late = outbox_rows(factory)["late3"]
        assert late.status == "failed" and "k0" in (late.last_error or "")
        assert "channel_not_found" in (late.last_error or "")


def test_replies_wait_for_a_parent_that_is_not_posted_yet_without_blocking_others(
    database_url: str,
) -> None:
    with migrated(database_url) as (_engine, factory):
        with session_scope(factory) as session:
            for i in range(25):  # the parent is queued later (or by another kind's job)
                put(session, f"early{i}", text=f"early {i}", thread_key="parent")
            put(session, "fresh", text="fresh")
        notifier = FakeNotifier()
        assert deliver_pending(
            session_factory=factory, edge=delivery_edge(notifier), now=NOW
        ).delivered == ["fresh"]
        assert outbox_rows(factory)["early0"].status == "pending"
        put_one(factory, "parent", text="parent")
        report = deliver_pending(session_factory=factory, edge=delivery_edge(notifier), now=NOW)
        assert report.delivered[0] == "parent" and len(report.delivered) == 26
        parent_ts = notifier.posts[1]["ts"]
        assert {p["thread_ts"] for p in notifier.posts[2:]} == {parent_ts}


def deliver_an_hour_later(
    factory: sessionmaker[Session],
    notifier: FakeNotifier,
    lookup: FindPosted,
    caplog: pytest.LogCaptureFixture,
) -> tuple[DeliveryReport, list[str]]:
    """Run a delivery round an hour after NOW; return its report and the warnings it logged."""
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="bot.notify.delivery"):
        report = deliver_pending(
            session_factory=factory,
            edge=delivery_edge(notifier, find_posted=lookup),
            now=NOW + dt.timedelta(hours=1),
        )
    return report, [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_failed_history_lookup_is_unknown_and_the_message_is_posted(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    lookups: list[tuple[str, str]] = []

    def not_a_member(channel: str, key: str, *_: Any) -> Posted | None:
        # a public channel posted to through chat:write.public: the bot cannot read its history
        lookups.append((channel, key))
        raise SlackError("not_in_channel")

    with migrated(database_url) as (_engine, factory):
        queue(factory, 1)
        notifier = FakeNotifier(fail_next=1, error=urllib.error.URLError("timed out"))
        first = deliver_pending(
            session_factory=factory,
            edge=delivery_edge(notifier, find_posted=not_a_member),
            now=NOW,
        )
        assert first.failed == ["k0"] and lookups == []
        second, warnings = deliver_an_hour_later(factory, notifier, not_a_member, caplog)
        assert lookups == [("C1", "k0")]
        assert second.delivered == ["k0"] and second.dead == []
        assert [p["text"] for p in notifier.posts] == ["message 0"]
        k0 = outbox_rows(factory)["k0"]
        assert k0.status == "delivered" and k0.last_error is None
        assert len(warnings) == 1 and "k0" in warnings[0] and "not_in_channel" in warnings[0]


class SlackApiFailure(Exception):
    """Like slack_sdk's SlackApiError: the response has the body's fields, a status and headers."""

    class Response(dict[str, Any]):
        status_code: int
        headers: dict[str, str]

    def __init__(
        self, error: str, status_code: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(f"The request to the Slack API failed. (error: {error})")
        self.response = self.Response(ok=False, error=error)
        self.response.status_code = status_code
        self.response.headers = headers or {}


class ScriptedLookup:
    """A history lookup that raises or returns the next of the given outcomes."""

    def __init__(self, *outcomes: Exception | Posted | None) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[str] = []

    def __call__(self, channel: str, key: str, *_: Any) -> Posted | None:
        self.calls.append(key)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def lose_the_first_answer(factory: sessionmaker[Session], notifier: FakeNotifier) -> None:
    """Queue k0 and k1; k0's first post times out (it may have reached Slack), ending the round."""
    queue(factory, 2)
    notifier.fail_next, notifier.error = 1, urllib.error.URLError("timed out")
    first = deliver_pending(session_factory=factory, edge=delivery_edge(notifier), now=NOW)
    assert first.failed == ["k0"] and first.delivered == []


TRANSIENT_LOOKUP_ERRORS = [
    SlackApiFailure("ratelimited", 429, {"Retry-After": "7"}),
    SlackApiFailure("ratelimited"),
    SlackApiFailure("fake_failure", 500),
    SlackApiFailure("fake_failure", 503),
    SlackApiFailure("internal_error"),
    SlackApiFailure("fatal_error"),
    SlackApiFailure("service_unavailable"),
    SlackApiFailure("request_timeout"),
    urllib.error.URLError("timed out"),
    TimeoutError("The read operation timed out"),
    ConnectionResetError(104, "Connection reset by peer"),
]


@pytest.mark.parametrize("error", TRANSIENT_LOOKUP_ERRORS, ids=repr)
def test_a_lookup_that_fails_for_now_leaves_the_message_pending_and_looks_again(
    database_url: str, error: Exception
) -> None:
    posted_before = Posted(channel="C1", ts="1700000000.000100")
    lookup = ScriptedLookup(error, posted_before)
    with migrated(database_url) as (_engine, factory):
        notifier = FakeNotifier()
        lose_the_first_answer(factory, notifier)
        later = NOW + dt.timedelta(hours=1)
        second = deliver_pending(
            session_factory=factory,
            edge=delivery_edge(notifier, find_posted=lookup),
            now=later,
        )
        # not posted, and the round ends as after a transient post failure: k1 waits too
        assert second.failed == ["k0"] and second.delivered == second.recovered == []
        assert notifier.posts == [] and lookup.calls == ["k0"]
        k0 = outbox_rows(factory)["k0"]
        assert k0.status == "pending" and k0.slack_ts is None
        assert k0.next_attempt_at is not None and k0.next_attempt_at > later
        if error is TRANSIENT_LOOKUP_ERRORS[0]:
            assert k0.next_attempt_at == later + dt.timedelta(seconds=7)  # its Retry-After
        assert "look" in (k0.last_error or "") and type(error).__name__ in (k0.last_error or "")

        third = deliver_pending(
            session_factory=factory,
            edge=delivery_edge(notifier, find_posted=lookup),
            now=k0.next_attempt_at,
        )
        assert lookup.calls == ["k0", "k0"]  # the next attempt looks again before posting
        assert third.recovered == ["k0"] and third.delivered == ["k0", "k1"]
        assert [p["text"] for p in notifier.posts] == ["message 1"]  # k0 was not posted again
        k0 = outbox_rows(factory)["k0"]
        assert (k0.status, k0.slack_ts, k0.last_error) == ("delivered", posted_before.ts, None)


def test_lookups_that_keep_failing_keep_the_message_retrying_with_a_growing_backoff(
    database_url: str,
) -> None:
    failures = [SlackApiFailure("fake_failure", 500) for _ in range(4)]
    lookup = ScriptedLookup(*failures, None)
    with migrated(database_url) as (_engine, factory):
        notifier = FakeNotifier()
        queue(factory, 1)
        notifier.fail_next, notifier.error = 1, urllib.error.URLError("timed out")
        deliver_pending(session_factory=factory, edge=delivery_edge(notifier), now=NOW)
        waits: list[dt.timedelta] = []
        for _ in failures:
            due = outbox_rows(factory)["k0"].next_attempt_at
            assert due is not None
            report = deliver_pending(
                session_factory=factory,
                edge=delivery_edge(notifier, find_posted=lookup),
                now=due,
            )
            assert report.failed == ["k0"] and notifier.posts == []
            k0 = outbox_rows(factory)["k0"]
            assert k0.status == "pending" and k0.next_attempt_at is not None
            waits.append(k0.next_attempt_at - due)
        assert waits == sorted(waits) and waits[0] < waits[-1] <= dt.timedelta(hours=1)
        due = outbox_rows(factory)["k0"].next_attempt_at
        assert due is not None
        # the lookup works again and finds nothing: the message is posted, once
        last = deliver_pending(
            session_factory=factory,
            edge=delivery_edge(notifier, find_posted=lookup),
            now=due,
        )
        assert last.delivered == ["k0"] and [p["text"] for p in notifier.posts] == ["message 0"]
        assert len(lookup.calls) == 5


@pytest.mark.parametrize(
    "error",
    [
        SlackApiFailure("not_in_channel"),  # a public channel posted to via chat:write.public
        SlackApiFailure("missing_scope"),
        SlackApiFailure("channel_not_found"),
        SlackApiFailure("thread_not_found"),
        ValueError("an answer the lookup could not read"),
    ],
    ids=repr,
)
def test_a_lookup_that_cannot_read_the_channel_is_unknown_and_the_message_is_posted(
    database_url: str, error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    lookup = ScriptedLookup(error)
    with migrated(database_url) as (_engine, factory):
        notifier = FakeNotifier()
        lose_the_first_answer(factory, notifier)
        report, warnings = deliver_an_hour_later(factory, notifier, lookup, caplog)
        assert lookup.calls == ["k0"]
        assert report.delivered == ["k0", "k1"] and report.failed == report.dead == []
        assert [p["text"] for p in notifier.posts] == ["message 0", "message 1"]
        named = slack_error(error) or str(error)[:20]  # Slack's error, else what went wrong
        assert len(warnings) == 1 and "k0" in warnings[0] and named in warnings[0]


def test_a_worker_whose_lease_ran_out_does_not_undo_the_worker_that_delivered(
    database_url: str,
) -> None:
    """A slow post outlives its lease; another worker re-claims and delivers the message; then
    the slow post fails for now. Its 'pending' must not overwrite 'delivered' (a later round
    would post the message a second time)."""
    with migrated(database_url) as (_engine, factory):
        queue(factory, 1)
        other = FakeNotifier()

        class SlowThenFails(FakeNotifier):
            def post(
                self,
                channel: str,
                text: str,
                blocks: list[dict[str, Any]],
                thread_ts: str | None = None,
            ) -> Posted:
                # meanwhile the lease expires and another worker delivers the message
                late = NOW + dt.timedelta(minutes=5)
                again = deliver_pending(
                    session_factory=factory, edge=delivery_edge(other), now=late
                )
                assert again.delivered == ["k0"]
                raise urllib.error.URLError("timed out")

        report = deliver_pending(
            session_factory=factory, edge=delivery_edge(SlowThenFails()), now=NOW
        )
        assert report.failed == ["k0"]
        k0 = outbox_rows(factory)["k0"]
        assert k0.status == "delivered" and k0.slack_ts == other.posts[0]["ts"]
        assert k0.attempts == 2
        later = deliver_pending(
            session_factory=factory, edge=delivery_edge(other), now=NOW + dt.timedelta(hours=2)
        )
        assert later.delivered == [] and len(other.posts) == 1
