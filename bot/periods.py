"""Months and date windows as explicit dates."""

from __future__ import annotations

import argparse
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


def day_words(day: dt.date, *, year: bool = False) -> str:
    """Say a day as people read it: `Nov 18`, or `Nov 18, 2026` where the year is not plain."""
    return f"{day:%b} {day.day}, {day.year}" if year else f"{day:%b} {day.day}"


def days_words(first: dt.date, last: dt.date, *, year: bool = False) -> str:
    """Say the days first..last (inclusive): `Nov 18–20`, `Oct 26–Nov 1`, `Nov 18–20, 2026`;
    a span across years always names both."""
    if first == last:
        return day_words(first, year=year)
    if first.year != last.year:
        return f"{day_words(first, year=True)}–{day_words(last, year=True)}"
    tail = f", {last.year}" if year else ""
    if (first.year, first.month) == (last.year, last.month):
        return f"{day_words(first)}–{last.day}{tail}"
    return f"{day_words(first)}–{day_words(last)}{tail}"


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


def day_argument(text: str) -> dt.date:
    """Parse a command-line date (`YYYY-MM-DD`, `today`, `yesterday`; today is the UTC date)."""
    try:
        return parse_day(text, dt.datetime.now(dt.UTC).date())
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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


# --- budget periods ---------------------------------------------------------------------

DAILY, WEEKLY, MONTHLY, QUARTERLY = "daily", "weekly", "monthly", "quarterly"
BUDGET_PERIODS = (DAILY, WEEKLY, MONTHLY, QUARTERLY)
PERIOD_UNITS = {DAILY: "day", WEEKLY: "week", MONTHLY: "month", QUARTERLY: "quarter"}
# a non-monthly period's label is a letter and its first day (`w2026-11-23`): alert keys and
# silences name it, so a threshold alerts once per period; a month keeps its `2026-11`
_LABEL_PREFIX = {DAILY: "d", WEEKLY: "w", QUARTERLY: "q"}
_LABEL_RE = re.compile(r"^([dwq])(\d{4}-\d{2}-\d{2})$")


def check_budget_period(text: str) -> str:
    """Return a budget period name (`weekly`, ...); UsageError names the ones there are."""
    word = text.strip().lower()
    if word not in BUDGET_PERIODS:
        raise UsageError(
            f"{text[:40]!r} is not a budget period; use daily, weekly, monthly or quarterly"
        )
    return word


@lru_cache(maxsize=512)
def budget_period(kind: str, day: dt.date) -> Period:
    """Return the period of a `kind` budget containing the day (ISO weeks start on Monday)."""
    if kind == MONTHLY:
        return month_of(day)
    if kind == DAILY:
        start, end = day, day + dt.timedelta(days=1)
    elif kind == WEEKLY:
        start = day - dt.timedelta(days=day.weekday())
        end = start + dt.timedelta(days=7)
    elif kind == QUARTERLY:
        first_month = 3 * ((day.month - 1) // 3) + 1
        start = dt.date(day.year, first_month, 1)
        end = (
            dt.date(day.year + 1, 1, 1)
            if first_month == 10
            else start.replace(month=first_month + 3)
        )
    else:
        raise UsageError(f"{kind!r} is not a budget period")
    return Period(start, end, f"{_LABEL_PREFIX[kind]}{start.isoformat()}")


def period_words(label: str) -> str:
    """Say a budget period label in words: `2026-11`, `week of Nov 23, 2026`, `2026-Q4`,
    `Nov 18, 2026`."""
    match = _LABEL_RE.match(label)
    if match is None:
        return label
    letter, start = match[1], dt.date.fromisoformat(match[2])
    if letter == "w":
        return f"week of {day_words(start, year=True)}"
    if letter == "q":
        return f"{start.year}-Q{(start.month - 1) // 3 + 1}"
    return day_words(start, year=True)


def per_period(kind: str) -> str:
    """Return the unit an amount is per: `day`, `week`, `month` or `quarter`."""
    return PERIOD_UNITS.get(kind, kind)


def period_kind_of_label(label: str) -> str:
    """Return the kind of budget period a label names (`w2026-11-23` -> weekly)."""
    match = _LABEL_RE.match(label)
    if match is None:
        return MONTHLY
    return {letter: kind for kind, letter in _LABEL_PREFIX.items()}[match[1]]


def per_suffix(kind: str) -> str:
    """Return what follows an amount to say its period: `` for a month, ` / week` otherwise."""
    return "" if kind == MONTHLY else f" / {per_period(kind)}"
