"""The outbox: insert-if-absent, retries, permanent failures, one claim per message."""

from __future__ import annotations

import datetime as dt
import threading
import time
import urllib.error
from typing import Any

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
