"""A poll source that fails, however it fails, fails alone: the others' spend and alerts go on."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

import pytest
from botocore.exceptions import ClientError, NoRegionError
from sqlalchemy import func, select

from bot.config import Settings
from bot.db.engine import session_scope
from bot.db.schema import DailySpend, IngestionRun
from bot.ingest.sources.base import Progress, SourceData, SpendSource
from bot.ingest.sources.focus import FocusSource
from bot.notify.sources import PolledSource, configured_sources
from bot.poll.cycle import run_cycle
from bot.web.health import health_snapshot
from tests.support.alert_walk import MONTH_START, add_spend, days, seed_walk, walk_day_rows
from tests.support.database import migrated

FOCUS = Path(__file__).resolve().parents[1] / "data" / "focus_sample.csv"
NOW = dt.datetime(2026, 11, 21, 6, tzinfo=dt.UTC)


class BrokenSource:
    """A source whose read raises what a buggy parser or a throttled AWS call would."""

    kind = "focus"

    def __init__(self, location: str, error: Exception | None) -> None:
        self.location = location
        self.error = error

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        if self.error is not None:
            raise self.error
        return FocusSource([str(FOCUS)]).read(tag_keys, progress)


def throttled() -> ClientError:
    """Return the error botocore raises when S3 throttles a GetObject."""
    return ClientError(
        {
            "Error": {"Code": "SlowDown", "Message": "Please reduce your request rate."},
            "ResponseMetadata": {"HTTPStatusCode": 503},
        },
        "GetObject",
    )


def test_a_failing_source_fails_alone_and_shows_in_healthz(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(database_url=database_url)
    crash = RuntimeError("parser blew up reading https://AKIAABCDEFGHIJKLMNOP:hunter2@x.example/f")
    broken = BrokenSource("s3://billing/broken/", crash)
    slow = BrokenSource("s3://billing/throttled/", throttled())
    good = FocusSource([str(FOCUS)])
    with migrated(database_url) as (_engine, factory):
        seed_walk(factory)
        for day in days(MONTH_START, dt.date(2026, 11, 21)):
            with session_scope(factory) as session:
                add_spend(session, walk_day_rows(day))
        with caplog.at_level(logging.ERROR, logger="bot.poll.cycle"):
            report = run_cycle(
                session_factory=factory,
                settings=settings,
                now=NOW,
                sources=[broken, good, slow],
                checks=("budgets",),
            )
        # the good source's spend is kept; budgets were evaluated and their alerts queued
        assert [r.location for r in report.fetched] == [good.location]
        assert len(report.fetch_errors) == 2
        assert report.budgets_evaluated == 5 and report.queued >= 1
        with session_scope(factory) as session:
            focus_rows = session.scalar(
                select(func.count()).where(DailySpend.day < dt.date(2025, 1, 1))
            )
            assert focus_rows
            health = health_snapshot(session, NOW)
        failures = {f["source"]: f for f in health["source_failures"]}
        assert sorted(failures) == ["s3://billing/broken/", "s3://billing/throttled/"]
        assert failures["s3://billing/broken/"]["error"] == "RuntimeError"
        assert failures["s3://billing/broken/"]["failed_at"] == NOW.isoformat()
        assert failures["s3://billing/throttled/"]["error"] == "ClientError"
        assert "SlowDown" in failures["s3://billing/throttled/"]["message"]
        # logged with its traceback; no credential in the log or in /healthz
        assert "Traceback" in caplog.text and "s3://billing/broken/" in caplog.text
        assert "parser blew up" in failures["s3://billing/broken/"]["message"]
        for text in (caplog.text, str(health)):
            assert "hunter2" not in text and "AKIAABCDEFGHIJKLMNOP" not in text

        # a later successful fetch of the same source clears its failure
        broken.error = None
        later = NOW + dt.timedelta(hours=6)
        run_cycle(
            session_factory=factory,
            settings=settings,
            now=later,
            sources=[broken, slow],
            checks=("budgets",),
        )
        with session_scope(factory) as session:
            health = health_snapshot(session, later)
            runs = session.scalar(
                select(func.count()).where(IngestionRun.location == good.location)
            )
        assert [f["source"] for f in health["source_failures"]] == ["s3://billing/throttled/"]
        assert health["source_failures"][0]["failed_at"] == later.isoformat()
        assert runs == 1


def test_configured_sources_have_stable_names_and_fail_at_fetch_time(database_url: str) -> None:
    settings = Settings(MLCOST_POLL_SOURCES="cost-explorer,focus:s3://billing/focus/")
    named = configured_sources(
        settings, dt.date(2026, 12, 2), model_tag_key="ml:model", ce_client=object()
    )
    assert [s.name for s in named] == ["cost-explorer", "focus:s3://billing/focus/"]
    assert named[0].location == "cost-explorer:2026-11-25..2026-12-02"

    def no_region() -> SpendSource:
        raise NoRegionError()

    unbuildable = PolledSource("cost-explorer", "cost-explorer", no_region)
    with migrated(database_url) as (_engine, factory):
        report = run_cycle(
            session_factory=factory,
            settings=Settings(database_url=database_url),
            now=NOW,
            sources=[unbuildable, FocusSource([str(FOCUS)])],
            checks=("budgets",),
        )
        assert len(report.fetched) == 1 and len(report.fetch_errors) == 1
        with session_scope(factory) as session:
            (failure,) = health_snapshot(session, NOW)["source_failures"]
        assert (failure["source"], failure["error"]) == ("cost-explorer", "NoRegionError")
