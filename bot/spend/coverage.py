"""Covered days: the days on which the ledger holds usage from some source.

A day no source had data for is unknown, not $0: baselines (bot/anomalies), forecasts
(bot/spend/forecast.py) and weekly posts (bot/poll/plan.py) use covered days only. On a covered
day, a scope without rows did spend $0.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend
from bot.spend.forecast import HISTORY_DAYS

# usage only: tax, credits and fees land on a day by how billing works, not because a source
# saw that day's workload
JUDGED_CHARGES = DailySpend.charge_category == "Usage"


def covered_days(
    session: Session, *, start: dt.date, end: dt.date, currency: str = "USD"
) -> list[dt.date]:
    """Return the days in [start, end] on which the ledger holds usage billed in `currency`.

    These are the days a baseline may use: on a day no source had data for, spend is unknown.
    Each covered day is found from the one before it, as the least day after it: one probe of
    the (currency, charge_category, day) index per day, however many rows a day holds (a loose
    index scan; a DISTINCT would read every row of the window).
    """
    judged = (DailySpend.currency == currency, JUDGED_CHARGES, DailySpend.day <= end)
    found = (
        select(func.min(DailySpend.day).label("day"))
        .where(*judged, DailySpend.day >= start)
        .cte("covered", recursive=True)
    )
    following = (
        select(func.min(DailySpend.day)).where(*judged, DailySpend.day > found.c.day)
    ).scalar_subquery()
    found = found.union_all(select(following).where(found.c.day.is_not(None)))
    return list(
        session.scalars(select(found.c.day).where(found.c.day.is_not(None)).order_by(found.c.day))
    )


def forecast_covered_days(
    session: Session, *, as_of: dt.date, period_start: dt.date, currency: str = "USD"
) -> list[dt.date]:
    """Return the covered days a forecast through as_of reads: its history window (the last
    28 days) and the period so far."""
    start = min(period_start, as_of - dt.timedelta(days=HISTORY_DAYS - 1))
    return covered_days(session, start=start, end=as_of, currency=currency)


def ledger_first_day(session: Session) -> dt.date | None:
    """Return the first day the ledger holds, or None for an empty ledger."""
    return session.scalar(select(func.min(DailySpend.day)))
