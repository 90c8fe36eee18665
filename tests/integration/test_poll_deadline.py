"""A poll source that hangs is given up at the deadline: the alerts the ledger makes due go out."""

from __future__ import annotations

import datetime as dt
import logging
import threading
from pathlib import Path

from sqlalchemy import func, select

from bot.config import Settings
from bot.db.engine import session_scope
from bot.db.schema import IngestionRun
from bot.ingest.sources.base import Progress, SourceData
from bot.ingest.sources.focus import FocusSource
from bot.poll.cycle import run_cycle
from bot.slack.render import SlackRenderer
from bot.web.health import health_snapshot
from tests.support.alert_walk import MONTH_START, add_spend, days, seed_walk, walk_day_rows
from tests.support.database import migrated
from tests.support.fake_notifier import FakeNotifier
from tests.support.outbox import delivery_edge

FOCUS = Path(__file__).resolve().parents[1] / "data" / "focus_sample.csv"
NOW = dt.datetime(2026, 11, 21, 6, tzinfo=dt.UTC)


class HangingSource:
    """A source whose read waits until the test lets it go (a server that never answers)."""

    kind = "opencost"
    location = "opencost:http://hangs.example:9003"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        self.started.set()
        self.release.wait(30)
        raise RuntimeError("the hanging source was let go")


def test_a_hanging_source_is_given_up_at_the_deadline_and_budget_alerts_are_posted(
    database_url: str,
) -> None:
    settings = Settings(database_url=database_url, poll_source_timeout_seconds=5)
    hanging = HangingSource()
    good = FocusSource([str(FOCUS)])
    notifier = FakeNotifier()
    try:
        with migrated(database_url) as (_engine, factory):
            seed_walk(factory)
            for day in days(MONTH_START, dt.date(2026, 11, 21)):
                with session_scope(factory) as session:
                    add_spend(session, walk_day_rows(day))
            report = run_cycle(
                session_factory=factory,
                settings=settings,
                now=NOW,
                sources=[hanging, good],
                edge=delivery_edge(notifier, renderer=SlackRenderer()),
                checks=("budgets",),
            )
            assert hanging.started.is_set()
            [error] = report.fetch_errors
            assert "did not finish within 5 s" in error
            assert "MLCOST_POLL_SOURCE_TIMEOUT_SECONDS" in error
            assert hanging.location in error
            # the other source was read, and the ledger's budget alerts were planned and posted
            assert [r.location for r in report.fetched] == [good.location]
            assert report.budgets_evaluated == 5 and report.queued >= 1
            assert report.delivery is not None and len(notifier.posts) == report.queued
            assert any("budget" in post["text"].lower() for post in notifier.posts)
            with session_scope(factory) as session:
                [failure] = health_snapshot(session, NOW)["source_failures"]
            assert failure["source"] == hanging.location
            assert failure["error"] == "SourceDeadlineExceeded"
    finally:
        hanging.release.set()


class HungSource:
    """A source that hangs until let go, then answers spend the poll must never write."""

    kind = "opencost"

    def __init__(self, location: str, events: list[str]) -> None:
        self.location = location
        self.events = events
        self.release = threading.Event()

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        self.events.append(f"start {self.location}")
        self.release.wait(30)
        return FocusSource([str(FOCUS)]).read(tag_keys, progress)


class Recorder(logging.Handler):
    """Note, in the same list as the reads' starts, each source the poll gave up."""

    def __init__(self, events: list[str]) -> None:
        super().__init__(logging.ERROR)
        self.events = events

    def emit(self, record: logging.LogRecord) -> None:
        if "did not finish within" in record.getMessage():
            self.events.append(f"gave up {record.args[0]}")  # type: ignore[index]


def test_hung_sources_are_read_side_by_side_under_one_deadline_and_never_write_late(
    database_url: str,
) -> None:
    settings = Settings(database_url=database_url, poll_source_timeout_seconds=2)
    events: list[str] = []
    first = HungSource("opencost:http://first.example:9003", events)
    second = HungSource("opencost:http://second.example:9003", events)
    good = FocusSource([str(FOCUS)])
    notifier = FakeNotifier()
    recorder = Recorder(events)
    logging.getLogger("bot.poll.cycle").addHandler(recorder)
    try:
        with migrated(database_url) as (_engine, factory):
            seed_walk(factory)
            for day in days(MONTH_START, dt.date(2026, 11, 21)):
                with session_scope(factory) as session:
                    add_spend(session, walk_day_rows(day))
            report = run_cycle(
                session_factory=factory,
                settings=settings,
                now=NOW,
                sources=[first, good, second],
                edge=delivery_edge(notifier, renderer=SlackRenderer()),
                checks=("budgets",),
            )
            # both hung reads were under way before the poll gave up either: one deadline, not two
            hung = {f"start {first.location}", f"start {second.location}"}
            assert set(events[:2]) == hung, events
            assert sorted(events[2:]) == sorted(
                [f"gave up {first.location}", f"gave up {second.location}"]
            )
            assert len(report.fetch_errors) == 2
            assert all("did not finish within 2 s" in e for e in report.fetch_errors)
            # the good source's spend is in the ledger and the ledger's alerts went out
            assert [r.location for r in report.fetched] == [good.location]
            assert report.budgets_evaluated == 5 and report.queued >= 1
            assert len(notifier.posts) == report.queued
            with session_scope(factory) as session:
                health = health_snapshot(session, NOW)
                runs = session.scalar(select(func.count()).select_from(IngestionRun))
                assert session.scalar(
                    select(func.count()).where(IngestionRun.location == good.location)
                )
            failures = {f["source"]: f["error"] for f in health["source_failures"]}
            assert failures == {
                first.location: "SourceDeadlineExceeded",
                second.location: "SourceDeadlineExceeded",
            }

            # let the abandoned reads answer: what they read is dropped, nothing is written
            for source in (first, second):
                source.release.set()
            for thread in threading.enumerate():
                if thread.name.startswith("read opencost:http://"):
                    thread.join(30)
            with session_scope(factory) as session:
                assert session.scalar(select(func.count()).select_from(IngestionRun)) == runs
                written = session.scalars(select(IngestionRun.location)).all()
            assert first.location not in written and second.location not in written
    finally:
        logging.getLogger("bot.poll.cycle").removeHandler(recorder)
        for source in (first, second):
            source.release.set()
