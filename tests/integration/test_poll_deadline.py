"""A poll source that hangs is given up at the deadline: the alerts the ledger makes due go out."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

from bot.config import Settings
from bot.db.engine import session_scope
from bot.ingest.sources.base import Progress, SourceData
from bot.ingest.sources.focus import FocusSource
from bot.notify.cycle import run_cycle
from bot.slack.notifier import FakeNotifier
from bot.web.health import health_snapshot
from tests.support.alert_walk import MONTH_START, add_spend, days, seed_walk, walk_day_rows
from tests.support.database import migrated

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
                notifier=notifier,
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
