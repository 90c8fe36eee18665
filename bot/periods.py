"""Months and date windows as explicit dates."""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache
from zoneinfo import ZoneInfo

from bot.errors import UsageError

_MONTH_RE = re.compile(r"^(\d{4})-(\d{2})$")


@dataclass(frozen=True)
class Period:
    """A half-open date window [start, end) with a label."""

    start: dt.date
    end: dt.date
    label: str

    @property
    def days(self) -> int:
        """Return the number of days in the window."""
        return (self.end - self.start).days


def local_today(now: dt.datetime, timezone: str) -> dt.date:
    """Return the date `now` falls on in the organisation's time zone."""
    return now.astimezone(ZoneInfo(timezone)).date()


@lru_cache(maxsize=512)
def parse_day(text: str, today: dt.date) -> dt.date:
    """Parse `YYYY-MM-DD`, `today` or `yesterday`; UsageError says what a date looks like."""
    word = text.strip().lower()
    if word == "today":
        return today
    if word == "yesterday":
        return today - dt.timedelta(days=1)
    try:
        return dt.date.fromisoformat(word)
    except ValueError:
        raise UsageError(f"{text!r} is not a date; use YYYY-MM-DD, today or yesterday") from None


def month_period(text: str) -> Period:
    """Parse `YYYY-MM` into that calendar month."""
    match = _MONTH_RE.match(text.strip())
    if not match or not 1 <= int(match[2]) <= 12 or not 1970 <= int(match[1]) <= 9998:
        raise UsageError(f"{text!r} is not a month; use YYYY-MM, e.g. 2026-11")
    year, month = int(match[1]), int(match[2])
    start = dt.date(year, month, 1)
    return Period(start, start + dt.timedelta(days=calendar.monthrange(year, month)[1]), text)


@lru_cache(maxsize=512)
def month_of(day: dt.date) -> Period:
    """Return the calendar month containing the day."""
    return month_period(f"{day.year:04d}-{day.month:02d}")


def previous_month(period: Period) -> Period:
    """Return the month before the period's first day."""
    return month_of(period.start - dt.timedelta(days=1))


def trailing_days(days: int, as_of: dt.date) -> Period:
    """Return the `days` days ending with as_of (inclusive)."""
    return Period(as_of - dt.timedelta(days=days - 1), as_of + dt.timedelta(days=1), f"{days}d")


def parse_window(text: str, as_of: dt.date) -> Period:
    """Parse `30d`, `90d` or `YYYY-MM`."""
    value = text.strip().lower()
    if re.fullmatch(r"\d{1,3}d", value) and 1 <= int(value[:-1]) <= 366:
        return trailing_days(int(value[:-1]), as_of)
    if _MONTH_RE.match(value):
        return month_period(value)
    raise UsageError(f"{text!r} is not a window; use 30d, 90d or YYYY-MM")
