"""Keep spend_rollup (the ledger summed by day, model, team, stage and currency) in step."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend, SpendRollup

_KEYS = ("day", "model", "team", "stage", "currency")
_SUMS = ("billed_cost", "effective_cost", "gpu_hours")


def ledger_day_range(session: Session, *conditions: Any) -> tuple[dt.date, dt.date] | None:
    """Return the first and last day of the ledger rows matching the conditions."""
    first, last = session.execute(
        select(func.min(DailySpend.day), func.max(DailySpend.day)).where(*conditions)
    ).one()
    return None if first is None else (first, last)


def refresh_rollup(session: Session, start: dt.date, end: dt.date) -> None:
    """Sum the ledger again for the days start..end (inclusive), replacing the rollup's rows."""
    session.execute(delete(SpendRollup).where(SpendRollup.day >= start, SpendRollup.day <= end))
    keys = [getattr(DailySpend, k) for k in _KEYS]
    sums = [func.sum(getattr(DailySpend, k)) for k in _SUMS]
    session.execute(
        insert(SpendRollup).from_select(
            [*_KEYS, *_SUMS],
            select(*keys, *sums)
            .where(DailySpend.day >= start, DailySpend.day <= end)
            .group_by(*keys),
        )
    )


def rebuild_rollup(session: Session) -> None:
    """Sum the whole ledger again (after loading rows by other means than an ingestion)."""
    span = ledger_day_range(session)
    session.execute(delete(SpendRollup))
    if span is not None:
        refresh_rollup(session, *span)
