"""The outbox: insert-if-absent, retries, permanent failures, one claim per message."""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import urllib.error
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from bot.db import session_scope
from bot.models import OutboxMessage
from bot.outbox import deliver_pending, enqueue
from bot.slack.notifier import FakeNotifier, Posted
from tests.alert_fixtures import migrated

NOW = dt.datetime(2026, 11, 21, 6, tzinfo=dt.UTC)
BLOCKS = [{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]


def queue(factory: sessionmaker[Session], n: int) -> None:
    with session_scope(factory) as session:
        for i in range(n):
            enqueue(
                session=session,
                dedupe_key=f"k{i}",
                kind="test",
                channel="C1",
                text=f"message {i}",
                blocks=BLOCKS,
            )


def rows(factory: sessionmaker[Session]) -> dict[str, OutboxMessage]:
    with session_scope(factory) as session:
        return {m.dedupe_key: m for m in session.scalars(select(OutboxMessage))}


class SlackError(Exception):
    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.response = {"ok": False, "error": error}


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
        report = deliver_pending(session_factory=factory, notifier=notifier, now=NOW)
        assert report.failed == ["k0"] and report.delivered == []
        k0 = rows(factory)["k0"]
        assert k0.status == "pending" and k0.attempts == 1
        assert k0.next_attempt_at == NOW + dt.timedelta(seconds=60)
        assert "URLError" in (k0.last_error or "")
        later = deliver_pending(
            session_factory=factory, notifier=notifier, now=NOW + dt.timedelta(seconds=30)
        )
        assert later.delivered == ["k1", "k2"]  # k0 is not due yet
        last = deliver_pending(
            session_factory=factory, notifier=notifier, now=NOW + dt.timedelta(minutes=2)
        )
        assert last.delivered == ["k0"] and len(notifier.posts) == 3


def test_permanent_errors_are_given_up_and_do_not_block_others(database_url: str) -> None:
    with migrated(database_url) as (_engine, factory):
        queue(factory, 2)
        notifier = FakeNotifier(fail_next=1, error=SlackError("channel_not_found"))
        report = deliver_pending(session_factory=factory, notifier=notifier, now=NOW)
        assert report.dead == ["k0"] and report.delivered == ["k1"]
        assert rows(factory)["k0"].status == "failed"
        assert (
            deliver_pending(
                session_factory=factory, notifier=notifier, now=NOW + dt.timedelta(days=1)
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
                kwargs={"session_factory": factory, "notifier": notifier, "now": NOW},
            )
            for _ in range(3)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        texts = [p["text"] for p in notifier.posts]
        assert len(texts) == 30 and len(set(texts)) == 30
        assert {m.status for m in rows(factory).values()} == {"delivered"}


def test_dead_parent_fails_its_replies_and_does_not_block_delivery(database_url: str) -> None:
    with migrated(database_url) as (_engine, factory):
        with session_scope(factory) as session:
            enqueue(session=session, dedupe_key="parent", kind="test", channel="CGONE",
                    text="parent", blocks=BLOCKS)  # fmt: skip
            for i in range(25):  # more than one claim window of replies under the dead parent
                enqueue(session=session, dedupe_key=f"reply{i}", kind="test", channel="CGONE",
                        text=f"reply {i}", blocks=BLOCKS, thread_key="parent")  # fmt: skip
        notifier = FakeNotifier(fail_next=1, error=SlackError("is_archived"))
        report = deliver_pending(session_factory=factory, notifier=notifier, now=NOW)
        assert "parent" in report.dead and notifier.posts == []
        with session_scope(factory) as session:
            enqueue(session=session, dedupe_key="fresh", kind="test", channel="C1",
                    text="fresh", blocks=BLOCKS)  # fmt: skip
        later = deliver_pending(
            session_factory=factory, notifier=notifier, now=NOW + dt.timedelta(hours=1)
        )
        assert later.delivered == ["fresh"]
        assert [p["text"] for p in notifier.posts] == ["fresh"]
        replies = [m for k, m in rows(factory).items() if k.startswith("reply")]
        assert len(replies) == 25 and {m.status for m in replies} == {"failed"}
        assert all("parent" in (m.last_error or "") and "is_archived" in (m.last_error or "")
                   for m in replies)  # fmt: skip


def test_replies_queued_after_their_parent_failed_fail_with_it(database_url: str) -> None:
    with migrated(database_url) as (_engine, factory):
        queue(factory, 1)
        notifier = FakeNotifier(fail_next=1, error=SlackError("channel_not_found"))
        assert deliver_pending(session_factory=factory, notifier=notifier, now=NOW).dead == ["k0"]
        with session_scope(factory) as session:
            for i in range(22):
                enqueue(session=session, dedupe_key=f"late{i}", kind="test", channel="C1",
                        text=f"late {i}", blocks=BLOCKS, thread_key="k0")  # fmt: skip
            enqueue(session=session, dedupe_key="fresh", kind="test", channel="C1",
                    text="fresh", blocks=BLOCKS)  # fmt: skip
        report = deliver_pending(session_factory=factory, notifier=notifier, now=NOW)
        assert report.delivered == ["fresh"] and len(report.dead) == 22
        late = rows(factory)["late3"]
        assert late.status == "failed" and "k0" in (late.last_error or "")
        assert "channel_not_found" in (late.last_error or "")


def test_replies_wait_for_a_parent_that_is_not_posted_yet_without_blocking_others(
    database_url: str,
) -> None:
    with migrated(database_url) as (_engine, factory):
        with session_scope(factory) as session:
            for i in range(25):  # the parent is queued later (or by another kind's job)
                enqueue(session=session, dedupe_key=f"early{i}", kind="test", channel="C1",
                        text=f"early {i}", blocks=BLOCKS, thread_key="parent")  # fmt: skip
            enqueue(session=session, dedupe_key="fresh", kind="test", channel="C1",
                    text="fresh", blocks=BLOCKS)  # fmt: skip
        notifier = FakeNotifier()
        assert deliver_pending(session_factory=factory, notifier=notifier, now=NOW).delivered == [
            "fresh"
        ]
        assert rows(factory)["early0"].status == "pending"
        with session_scope(factory) as session:
            enqueue(session=session, dedupe_key="parent", kind="test", channel="C1",
                    text="parent", blocks=BLOCKS)  # fmt: skip
        report = deliver_pending(session_factory=factory, notifier=notifier, now=NOW)
        assert report.delivered[0] == "parent" and len(report.delivered) == 26
        parent_ts = notifier.posts[1]["ts"]
        assert {p["thread_ts"] for p in notifier.posts[2:]} == {parent_ts}


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
            session_factory=factory, notifier=notifier, now=NOW, find_posted=not_a_member
        )
        assert first.failed == ["k0"] and lookups == []
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="bot.outbox"):
            second = deliver_pending(
                session_factory=factory, notifier=notifier, now=NOW + dt.timedelta(hours=1),
                find_posted=not_a_member,
            )  # fmt: skip
        assert lookups == [("C1", "k0")]
        assert second.delivered == ["k0"] and second.dead == []
        assert [p["text"] for p in notifier.posts] == ["message 0"]
        k0 = rows(factory)["k0"]
        assert k0.status == "delivered" and k0.last_error is None
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "k0" in warnings[0] and "not_in_channel" in warnings[0]
