"""Month-end spend forecasts: one projection for budgets, alerts, reports and charts (pure).

The forecast is deliberately simple so anyone can check it by hand:

* days of the month up to and including ``as_of`` count as **actual** spend (a day with no row
  counts as zero: the ledger keeps zero-spend days implicit);
* each remaining day is projected from the **history window**, the last ``LOOKBACK_DAYS`` days up
  to ``as_of`` (days before the first day with data are not part of it);
* with at least 14 days of history the projection is the mean of the last seven days scaled by a
  **weekday factor** (that weekday's mean over the window / the window's mean), so quiet weekends
  and busy Mondays are carried forward; otherwise it is a flat **run-rate** of the last (up to
  seven) days;
* a projected day is never negative (credits are real, but not a trend to extrapolate).

`Forecast.method` says which of these was used, so a message can show it next to the number.

Budgets work on a `SpendSummary` (month-to-date, the last seven days, and totals per weekday
over the trailing 28 days), which SQL computes for thousands of budgets in one statement;
`summarize_daily` builds the same summary from a plain daily series, which is how
`forecast_month` forecasts a report's or a chart's series with the same projection.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache

from bot.money import CENT
from bot.periods import Period, month_of

MIN_MONTH_DAYS = 5  # no forecast before five days of the month are known
SEASONAL_MIN_HISTORY = 14  # a weekday pattern needs two of each weekday
HISTORY_DAYS = 28
RUN_RATE_DAYS = 7
ZERO = Decimal(0)


@dataclass(frozen=True)
class SpendSummary:
    """What a forecast needs to know about one budget's spend, as of a day."""

    as_of: dt.date
    first_day: dt.date  # the first day the ledger covers; earlier days are unknown, not zero
    month_to_date: Decimal
    last_7_days: Decimal
    weekday_totals: tuple[Decimal, ...]  # Monday..Sunday over the history window
    # the budget period forecast to its end (month_to_date is then this period's to date);
    # None: the calendar month of as_of
    period: Period | None = None

    @property
    def month(self) -> Period:
        """Return the period forecast: the budget's, else the calendar month of as_of."""
        return self.period or month_of(self.as_of)

    @property
    def history_start(self) -> dt.date:
        """Return the first day of the history window (28 days, or less if the ledger is new)."""
        return max(self.first_day, self.as_of - dt.timedelta(days=HISTORY_DAYS - 1))

    @property
    def history_days(self) -> int:
        """Return how many days of history the window holds."""
        return max(0, (self.as_of - self.history_start).days + 1)

    @property
    def month_days_known(self) -> int:
        """Return how many days of this month the ledger covers."""
        return max(0, (self.as_of - max(self.month.start, self.first_day)).days + 1)


@dataclass(frozen=True)
class BudgetForecast:
    """A month-end estimate, with the method that produced it in words."""

    amount: Decimal
    method: str
    days_of_data: int


def history_window(as_of: dt.date, first_day: dt.date) -> list[dt.date]:
    """Return the days of the history window, oldest first."""
    start = max(first_day, as_of - dt.timedelta(days=HISTORY_DAYS - 1))
    return [start + dt.timedelta(days=i) for i in range((as_of - start).days + 1)]


def summarize_daily(
    daily: Mapping[dt.date, Decimal],
    *,
    as_of: dt.date,
    first_day: dt.date,
    period: Period | None = None,
) -> SpendSummary:
    """Build a SpendSummary from daily totals (missing days within the ledger are zero).

    `period` is the one forecast (a budget's week or quarter); None: the month of as_of.
    """
    month_start = (period or month_of(as_of)).start
    weekday = [ZERO] * 7
    for day in history_window(as_of, first_day):
        weekday[day.weekday()] += daily.get(day, ZERO)
    mtd = sum((v for d, v in daily.items() if month_start <= d <= as_of), ZERO)
    last7 = sum(
        (v for d, v in daily.items() if as_of - dt.timedelta(days=RUN_RATE_DAYS - 1) <= d <= as_of),
        ZERO,
    )
    return SpendSummary(as_of, first_day, mtd, last7, tuple(weekday), period)


def _weekday_counts(days: list[dt.date]) -> tuple[int, ...]:
    counts = [0] * 7
    for day in days:
        counts[day.weekday()] += 1
    return tuple(counts)


@lru_cache(maxsize=64)
def _calendar(
    as_of: dt.date, first_day: dt.date, month_end: dt.date
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Return (history days per weekday, remaining days of the period per weekday)."""
    remaining = [as_of + dt.timedelta(days=i) for i in range(1, (month_end - as_of).days)]
    return _weekday_counts(history_window(as_of, first_day)), _weekday_counts(remaining)


QUANTUM = Decimal("0.0000000001")


def weekday_rates(summary: SpendSummary) -> tuple[tuple[Decimal, ...], str] | None:
    """Return the projected spend of one day per weekday (Mon..Sun) and the method in words.

    With two weeks of history a day is the last week's daily level scaled by its weekday's share
    of the window; with less, a flat run-rate of the last days. Never negative: credits are real,
    but not a trend to extrapolate. None when there is no history at all.
    """
    history = summary.history_days
    if history <= 0:
        return None
    if history >= SEASONAL_MIN_HISTORY:
        history_counts, _ = _calendar(summary.as_of, summary.first_day, summary.month.end)
        average = sum(summary.weekday_totals, ZERO) / history
        level = summary.last_7_days / RUN_RATE_DAYS
        rates = tuple(
            level * summary.weekday_totals[w] / history_counts[w] / average
            if average > 0 and history_counts[w]
            else ZERO
            for w in range(7)
        )
        method = f"last-7-day run-rate shaped by the weekday pattern of the last {history} days"
    else:
        days = min(RUN_RATE_DAYS, history)
        rates = (summary.last_7_days / days,) * 7
        method = (
            f"run-rate of the last {days} days (only {history} days of history, "
            "too few for a weekday pattern)"
        )
    return tuple(max(ZERO, r) for r in rates), method


def project_remaining(summary: SpendSummary) -> tuple[dict[dt.date, Decimal], str]:
    """Project each remaining day of the month (for charts); return them and the method."""
    found = weekday_rates(summary)
    if found is None:
        return {}, "no data yet"
    rates, method = found
    remaining = [
        summary.as_of + dt.timedelta(days=i)
        for i in range(1, (summary.month.end - summary.as_of).days)
    ]
    return {day: rates[day.weekday()].quantize(QUANTUM) for day in remaining}, method


def min_days_known(period: Period) -> int:
    """Return how many days of a period must be known before it is forecast.

    Five for a month or a quarter; two for a week (a forecast on its last days says little);
    a day is never forecast (the ledger is daily: a day evaluated is already complete).
    """
    return min(MIN_MONTH_DAYS, period.days // 3) if period.days > 1 else period.days + 1


def forecast_month_end(summary: SpendSummary) -> BudgetForecast | None:
    """Forecast the period's total spend (the month's unless the summary names a budget
    period), or None while too few of its days are known (fewer than five of a month)."""
    if summary.month_days_known < min_days_known(summary.month):
        return None
    found = weekday_rates(summary)
    if found is None:
        return None
    rates, method = found
    _, remaining_counts = _calendar(summary.as_of, summary.first_day, summary.month.end)
    projected = sum((rates[w] * remaining_counts[w] for w in range(7)), ZERO)
    amount = (summary.month_to_date + projected).quantize(CENT)
    return BudgetForecast(amount=amount, method=method, days_of_data=summary.month_days_known)


LOOKBACK_DAYS = HISTORY_DAYS  # a series is read this far back for its forecast

METHOD_COMPLETE = "actual (month complete)"
METHOD_PERIOD_COMPLETE = "actual (period complete)"  # a budget's day, week or quarter
METHOD_NO_DATA = "no data yet"
METHOD_RUN_RATE = "run-rate"
METHOD_WEEKDAY = "weekday run-rate"


@dataclass(frozen=True)
class Forecast:
    """A month-end forecast: what is spent, what is projected, and how it was projected."""

    amount: Decimal
    method: str
    days_of_data: int
    actual: Decimal = ZERO
    projected: dict[dt.date, Decimal] = field(default_factory=dict)

    def describe(self) -> str:
        """Return the method in words, e.g. `weekday run-rate over 28 days`."""
        if self.method in (METHOD_COMPLETE, METHOD_PERIOD_COMPLETE, METHOD_NO_DATA):
            return self.method
        return f"{self.method} over {self.days_of_data} day{'s' * (self.days_of_data != 1)}"


def forecast_month(daily: Mapping[dt.date, Decimal], month: Period, as_of: dt.date) -> Forecast:
    """Forecast the month's (or a budget period's) total from daily spend known through as_of.

    The projection is the one budget alerts use (`project_remaining` above), so a
    chart and an alert about the same budget never disagree.
    """
    actual = sum(
        (cost for day, cost in daily.items() if month.start <= day <= as_of and day < month.end),
        ZERO,
    )
    if as_of + dt.timedelta(days=1) >= month.end:
        complete = METHOD_COMPLETE if month == month_of(month.start) else METHOD_PERIOD_COMPLETE
        return Forecast(actual, complete, 0, actual)
    known = [day for day in daily if day <= as_of]
    if not known:
        return Forecast(actual, METHOD_NO_DATA, 0, actual)
    summary = summarize_daily(daily, as_of=as_of, first_day=min(known), period=month)
    projected, _words = project_remaining(summary)
    method = METHOD_WEEKDAY if summary.history_days >= SEASONAL_MIN_HISTORY else METHOD_RUN_RATE
    total = actual + sum(projected.values(), ZERO)
    return Forecast(total, method, summary.history_days, actual, projected)
