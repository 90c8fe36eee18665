"""Late or restated spend: the anomaly check re-reads a trailing window of days every run."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from bot.anomalies.detect import find_anomalies, scan_anomalies
from bot.config import Settings
from bot.db.engine import session_scope
from bot.db.schema import OutboxMessage
from bot.poll.cycle import run_cycle
from tests.support.alert_walk import MONTH_START, add_spend, days, seed_walk, walk_day_rows
from tests.support.database import migrated

SPIKE_DAY = dt.date(2026, 11, 10)
SPIKE_KEYS = ["anomaly:spend:model:beta:2026-11-10", "anomaly:spend:stage:training:2026-11-10"]


def anomaly_run(factory: sessionmaker[Session], settings: Settings, as_of: dt.date) -> list[str]:
    """Run the morning anomaly check after `as_of`; return the keys it queued."""
    now = dt.datetime.combine(as_of + dt.timedelta(days=1), dt.time(9, 15), dt.UTC)
    report = run_cycle(session_factory=factory, settings=settings, now=now, checks=("anomalies",))
    assert report.as_of == as_of
    return sorted(p.dedupe_key for p in report.planned)


def test_a_spike_ingested_late_is_alerted_on_the_next_run_and_only_once(
    database_url: str,
) -> None:
    settings = Settings(database_url=database_url)
    with migrated(database_url) as (_engine, factory):
        seed_walk(factory)
        queued: dict[dt.date, list[str]] = {}
        for day in days(MONTH_START, dt.date(2026, 11, 20)):
            rows = walk_day_rows(day)
            if day == SPIKE_DAY:  # the big training run's charges are not in the export yet
                rows = [r for r in rows if r["resource_id"] != "i-beta-big"]
            if day == SPIKE_DAY + dt.timedelta(days=2):  # ... and arrive two days late
                rows += [r for r in walk_day_rows(SPIKE_DAY) if r["resource_id"] == "i-beta-big"]
            with session_scope(factory) as session:
                add_spend(session, rows)
            queued[day] = anomaly_run(factory, settings, day)
            queued[day] += anomaly_run(factory, settings, day)  # a second run adds nothing
        late = SPIKE_DAY + dt.timedelta(days=2)
        assert queued[late] == SPIKE_KEYS
        assert {d: k for d, k in queued.items() if k} == {late: SPIKE_KEYS}
        with session_scope(factory) as session:
            keys = sorted(session.scalars(select(OutboxMessage.dedupe_key)))
        assert keys == SPIKE_KEYS


def test_the_recheck_window_is_a_setting(database_url: str) -> None:
    settings = Settings(database_url=database_url, MLCOST_ANOMALY_RECHECK_DAYS=2)
    with migrated(database_url) as (_engine, factory):
        seed_walk(factory)
        for day in days(MONTH_START, dt.date(2026, 11, 14)):
            with session_scope(factory) as session:
                add_spend(session, walk_day_rows(day))
        # Nov 10 is three days before Nov 13: outside a window of two days
        assert anomaly_run(factory, settings, dt.date(2026, 11, 13)) == []
        assert anomaly_run(factory, settings, dt.date(2026, 11, 11)) == SPIKE_KEYS


def test_a_window_judges_each_day_as_a_single_day_check_would(database_url: str) -> None:
    with migrated(database_url) as (_engine, factory):
        seed_walk(factory)
        with session_scope(factory) as session:
            for day in days(MONTH_START, dt.date(2026, 11, 20)):
                add_spend(session, walk_day_rows(day))
            first, last = dt.date(2026, 11, 3), dt.date(2026, 11, 19)
            window = scan_anomalies(
                session=session, first=first, last=last, min_excess=Decimal(100)
            ).anomalies
            one_by_one = [
                a
                for day in days(first, last + dt.timedelta(days=1))
                for a in find_anomalies(session=session, day=day, min_excess=Decimal(100))
            ]
        assert window == one_by_one
        assert [a.dedupe_key for a in window] == SPIKE_KEYS
