"""How fresh the ledger is on a day: its newest day, the sources that fed it, stale or not.

One answer for every surface that could otherwise give a verdict or an all-clear on data that
stopped arriving: the release gate (no verdict), `report waste`, `/mlcost model|team|waste` and
the weekly waste digest (a line saying so). `freshness_line` renders it as plain text; Slack
callers escape it like any other text.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from bot.db.reading import Reader
from bot.db.tables import daily_spend, ingestion_runs

MAX_AGE_SETTING = "MLCOST_GATE_MAX_DATA_AGE_DAYS"


@dataclass(frozen=True)
class SourceLastDay:
    """A billing source that fed the ledger (its ingestion kind) and its newest day there."""

    source: str
    last_day: dt.date


@dataclass(frozen=True)
class LedgerFreshness:
    """The ledger's newest day on or before `today`, and whether it is older than allowed.

    `sources` is filled only when the ledger is stale (it reads the whole ledger).
    """

    today: dt.date
    last_day: dt.date | None
    max_age_days: int
    sources: tuple[SourceLastDay, ...] = ()

    @property
    def age_days(self) -> int | None:
        """Return how many days before today the ledger's newest day is."""
        return None if self.last_day is None else (self.today - self.last_day).days

    @property
    def stale(self) -> bool:
        """Return whether the ledger holds nothing, or nothing newer than the allowed age."""
        age = self.age_days
        return age is None or age > self.max_age_days

    def as_json(self) -> dict[str, Any]:
        """Return the facts for JSON output."""
        return {
            "last_day": None if self.last_day is None else self.last_day.isoformat(),
            "age_days": self.age_days,
            "max_age_days": self.max_age_days,
            "stale": self.stale,
            "sources": [
                {"source": s.source, "last_day": s.last_day.isoformat()} for s in self.sources
            ],
        }


def ledger_freshness(*, session: Reader, today: dt.date, max_age_days: int) -> LedgerFreshness:
    """Read the newest usage day up to today; when stale, which sources fed it and until when.

    Only usage counts (as for anomaly baselines' covered days): tax, support or a reservation fee
    billed on the 1st, credits and adjustments say nothing about whether usage data still arrives.
    """
    usage = (daily_spend.c.day <= today, daily_spend.c.charge_category == "Usage")
    last = session.scalar(select(func.max(daily_spend.c.day)).where(*usage))
    fresh = LedgerFreshness(today=today, last_day=last, max_age_days=max_age_days)
    if not fresh.stale or last is None:
        return fresh
    newest = func.max(daily_spend.c.day)
    rows = session.execute(
        select(ingestion_runs.c.source, newest)
        .join(ingestion_runs, ingestion_runs.c.id == daily_spend.c.run_id)
        .where(*usage)
        .group_by(ingestion_runs.c.source)
        .order_by(newest.desc(), ingestion_runs.c.source)
    ).all()
    sources = tuple(SourceLastDay(str(source), day) for source, day in rows)
    return LedgerFreshness(today=today, last_day=last, max_age_days=max_age_days, sources=sources)


def freshness_line(freshness: LedgerFreshness) -> str | None:
    """Say in one plain-text line that the data is stale and what to ingest; None when fresh."""
    if not freshness.stale:
        return None
    if freshness.last_day is None:
        return (
            f"no data: the ledger holds no spend up to {freshness.today}; ingest a billing "
            "source first (mlcost ingest focus|cur|cost-explorer|athena|opencost ...)"
        )
    age = freshness.age_days
    days = "1 day" if age == 1 else f"{age} days"
    line = (
        f"stale data: the ledger's newest day is {freshness.last_day}, {days} before "
        f"{freshness.today} (more than {MAX_AGE_SETTING}={freshness.max_age_days})"
    )
    if not freshness.sources:
        return line + "; ingest newer billing data (mlcost ingest ...)"
    fed = ", ".join(f"{s.source} (up to {s.last_day})" for s in freshness.sources)
    newest = freshness.sources[0].source
    return f"{line}; fed by {fed}: ingest newer data (mlcost ingest {newest} ...)"
