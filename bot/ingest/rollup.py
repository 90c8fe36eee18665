"""Keep spend_rollup (the ledger summed by day, model, team, stage and currency) in step."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, insert, select

from bot.db.tables import daily_spend, spend_rollup

if TYPE_CHECKING:
    from bot.db.reading import Reader, Writer

_KEYS = ("day", "model", "team", "stage", "currency")
_SUMS = ("billed_cost", "effective_cost", "gpu_hours")


def ledger_day_range(session: Reader, *conditions: Any) -> tuple[dt.date, dt.date] | None:
    """Return the first and last day of the ledger rows matching the conditions."""
    first, last = session.execute(
        select(func.min(daily_spend.c.day), func.max(daily_spend.c.day)).where(*conditions)
    ).one()
    return None if first is None else (first, last)


def refresh_rollup(session: Writer, start: dt.date, end: dt.date) -> None:
    """Sum the ledger again for the days start..end (inclusive), replacing the rollup's rows."""
    session.execute(
        delete(spend_rollup).where(spend_rollup.c.day >= start, spend_rollup.c.day <= end)
    )
    keys = [daily_spend.c[k] for k in _KEYS]
    sums = [func.sum(daily_spend.c[k]) for k in _SUMS]
    session.execute(
        insert(spend_rollup).from_select(
            [*_KEYS, *_SUMS],
            select(*keys, *sums)
            .where(daily_spend.c.day >= start, daily_spend.c.day <= end)
            .group_by(*keys),
        )
    )


def rebuild_rollup(session: Writer) -> None:
    """Sum the whole ledger again (after loading rows by other means than an ingestion)."""
    span = ledger_day_range(session)
    session.execute(delete(spend_rollup))
    if span is not None:
        refresh_rollup(session, *span)
