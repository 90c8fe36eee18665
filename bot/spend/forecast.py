"""Month-end spend forecasts: one projection for budgets, alerts, reports and charts (pure).

The forecast is deliberately simple so anyone can check it by hand:

* days of the month up to and including ``as_of`` count as **actual** spend (a day with no row
  counts as zero: the ledger keeps zero-spend days implicit);
* each remaining day is projected from the **history**: the *covered* days among the last
  ``LOOKBACK_DAYS`` days up to ``as_of``. A covered day is one on which the ledger holds usage
  from some source (bot/spend/coverage.py); a day no source had data for is unknown, not $0, and
  is left out, while on a covered day a scope without rows did spend $0;
* with fewer than ``MIN_COVERED_DAYS`` (7) covered days there is **no forecast**: "not enough
  history to forecast", never a number;
* the **run-rate** is the mean of the last seven covered days; with at least 14 covered days,
  two or more of each weekday, it is scaled by a **weekday factor** (that weekday's mean over
  the history / the mean of the seven weekdays' means), so quiet weekends and busy Mondays are
  carried forward;
  otherwise it is flat;
* the weekday pattern is learned from the history's **usual** days only: a day the anomaly rule
  would call unusual (above the history's median by more than 3.5 robust spreads and 10 %,
  bot/anomalies/baseline.py) is left out of the shape, whether or not its owners answered it
  Expected, so one spike on a Tuesday does not make every Tuesday expensive;
* a projected day is never negative (credits are real, but not a trend to extrapolate).

`Forecast.method` says which of these was used, so a message can show it next to the number.

Budgets work on a `SpendSummary` (period-to-date, the run-rate days' spend, and totals per
weekday over the history), which SQL computes for thousands of budgets in one statement;
`summarize_daily` builds the same summary from a plain daily series, which is how
`forecast_month` forecasts a report's or a chart's series with the same projection.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache

from bot.anomalies.baseline import robust_baseline
from bot.money import CENT
from bot.periods import Period, month_of

MIN_MONTH_DAYS = 5  # no forecast before five days of the month are known
MIN_COVERED_DAYS = 7  # fewer covered days in the history: not enough history to forecast
SEASONAL_MIN_HISTORY = 14  # a weekday pattern needs two of each weekday
SEASONAL_MIN_PER_WEEKDAY = 2
HISTORY_DAYS = 28
RUN_RATE_DAYS = 7
ZERO = Decimal(0)
NOT_ENOUGH_HISTORY = "not enough history to forecast"


@dataclass(frozen=True, slots=True)  # tens of thousands per evaluation: slots build faster
class SpendSummary:
    """What a forecast needs to know about one budget's spend, as of a day."""

    as_of: dt.date
    # the covered days up to as_of (at least those of the history window and of the period so
    # far), oldest first: days no source had data for are unknown, not zero
    covered: tuple[dt.date, ...]
    month_to_date: Decimal
    last_7_days: Decimal  # spend on the run-rate days: the last seven covered days
    weekday_totals: tuple[Decimal, ...]  # Monday..Sunday over the shape's days
    # the budget period forecast to its end (month_to_date is then this period's to date);
    # None: the calendar month of as_of
    period: Period | None = None
    # the history days the weekday pattern is learned from (its usual days, `weekday_shape`);
    # None: every covered day of the history
    shape_days: tuple[dt.date, ...] | None = None

    @property
    def month(self) -> Period:
        """Return the period forecast: the budget's, else the calendar month of as_of."""
        return self.period or month_of(self.as_of)

    @property
    def history(self) -> tuple[dt.date, ...]:
        """Return the covered days of the history window (the last 28 days through as_of)."""
        return _history_of(self.covered, self.as_of)

    @property
    def history_days(self) -> int:
        """Return how many covered days the history window holds."""
        return len(self.history)

    @property
    def month_days_known(self) -> int:
        """Return how many days of this period through as_of are covered."""
        return _covered_between(self.covered, self.month.start, self.as_of)


# Budget evaluation builds one summary per budget, tens of thousands sharing the same covered
# days: these are worked out once per (covered days, as_of), not once per budget.
@lru_cache(maxsize=64)
def _history_of(covered: tuple[dt.date, ...], as_of: dt.date) -> tuple[dt.date, ...]:
    return history_days(covered, as_of)


@lru_cache(maxsize=64)
def _covered_between(covered: tuple[dt.date, ...], start: dt.date, end: dt.date) -> int:
    return sum(1 for day in covered if start <= day <= end)


@dataclass(frozen=True, slots=True)  # tens of thousands per evaluation: slots build faster
class BudgetForecast:
    """A period-end estimate, with the method that produced it in words.

    `amount` is None when there is not enough history to forecast; `method` then says so.
    """

    amount: Decimal | None
    method: str
    days_of_data: int


def history_days(covered: Iterable[dt.date], as_of: dt.date) -> tuple[dt.date, ...]:
    """Return the covered days of the history window ending on as_of, oldest first."""
    start = as_of - dt.timedelta(days=HISTORY_DAYS - 1)
    return tuple(sorted(day for day in covered if start <= day <= as_of))


def run_rate_days(history: tuple[dt.date, ...]) -> tuple[dt.date, ...]:
    """Return the days the run-rate is the mean of: the last seven covered days."""
    return history[-RUN_RATE_DAYS:]


def not_enough_history(covered_in_window: int) -> str:
    """Say why there is no forecast: `not enough history to forecast (3 covered days ...)`."""
    plural = "s" * (covered_in_window != 1)
    return (
        f"{NOT_ENOUGH_HISTORY} ({covered_in_window} covered day{plural} in the last "
        f"{HISTORY_DAYS}; {MIN_COVERED_DAYS} needed)"
    )


def weekday_shape(
    spend: Mapping[dt.date, Decimal], history: tuple[dt.date, ...]
) -> tuple[tuple[dt.date, ...], tuple[Decimal, ...]]:
    """Return the history's usual days and their spend per weekday (Monday..Sunday).

    A day above the history's robust ceiling (the anomaly rule's: median plus 3.5 spreads, and
    at least 10 %) is unusual and left out. A scope that spends on fewer than half its days (a
    median of zero) keeps every day: its spending days are its pattern, not spikes.
    """
    return weekday_shape_of(history, [spend.get(day, ZERO) for day in history])


def weekday_shape_of(
    history: tuple[dt.date, ...], values: list[Decimal]
) -> tuple[tuple[dt.date, ...], tuple[Decimal, ...]]:
    """`weekday_shape` of the history's spend given day by day (`values[i]` on `history[i]`).

    Budget evaluation calls it once for each budget with spend (tens of thousands), so the
    weekdays of the history are worked out once.
    """
    weekdays = _weekdays(history)
    baseline = robust_baseline(values)
    weekday = [ZERO] * 7
    if baseline.median > 0:
        ceiling = baseline.ceiling
        kept = []
        for day, w, value in zip(history, weekdays, values, strict=True):
            if value <= ceiling:
                kept.append(day)
                weekday[w] += value
        return tuple(kept), tuple(weekday)
    for w, value in zip(weekdays, values, strict=True):
        weekday[w] += value
    return history, tuple(weekday)


@lru_cache(maxsize=64)
def _weekdays(history: tuple[dt.date, ...]) -> tuple[int, ...]:
    return tuple(day.weekday() for day in history)


def summarize_daily(
    daily: Mapping[dt.date, Decimal],
    *,
    as_of: dt.date,
    covered: Iterable[dt.date],
    period: Period | None = None,
) -> SpendSummary:
    """Build a SpendSummary from daily totals and the ledger's covered days.

    A covered day without a row in `daily` is zero; a day not covered is left out.
    `period` is the one forecast (a budget's week or quarter); None: the month of as_of.
    """
    month_start = (period or month_of(as_of)).start
    known = tuple(sorted(day for day in set(covered) if day <= as_of))
    history = history_days(known, as_of)
    shape, weekday = weekday_shape(daily, history)
    mtd = sum((v for d, v in daily.items() if month_start <= d <= as_of), ZERO)
    last7 = sum((daily.get(d, ZERO) for d in run_rate_days(history)), ZERO)
    return SpendSummary(as_of, known, mtd, last7, weekday, period, shape)


def _weekday_counts(days: Iterable[dt.date]) -> tuple[int, ...]:
    counts = [0] * 7
    for day in days:
        counts[day.weekday()] += 1
    return tuple(counts)


@lru_cache(maxsize=64)
def _remaining_counts(as_of: dt.date, month_end: dt.date) -> tuple[int, ...]:
    """Return the remaining days of the period (after as_of) per weekday."""
    return _weekday_counts(as_of + dt.timedelta(days=i) for i in range(1, (month_end - as_of).days))


@lru_cache(maxsize=256)
def _shape(history: tuple[dt.date, ...], as_of: dt.date) -> tuple[tuple[int, ...], bool, bool]:
    """Return (covered days per weekday, whether they hold a weekday pattern, whether the
    history is every day of its span up to as_of, without gaps)."""
    counts = _weekday_counts(history)
    seasonal = len(history) >= SEASONAL_MIN_HISTORY and min(counts) >= SEASONAL_MIN_PER_WEEKDAY
    unbroken = (
        bool(history)
        and history[-1] == as_of
        and ((history[-1] - history[0]).days + 1 == len(history))
    )
    return counts, seasonal, unbroken


def is_seasonal(summary: SpendSummary) -> bool:
    """Return whether the history's usual days hold a weekday pattern (14, two of each)."""
    shape = summary.history if summary.shape_days is None else summary.shape_days
    return _shape(shape, summary.as_of)[1]


QUANTUM = Decimal("0.0000000001")


def weekday_rates(summary: SpendSummary) -> tuple[tuple[Decimal, ...], str] | None:
    """Return the projected spend of one day per weekday (Mon..Sun) and the method in words.

    A day is the mean of the last seven covered days, scaled by its weekday's share of the
    history when the history holds a weekday pattern; flat otherwise. Never negative: credits
    are real, but not a trend to extrapolate. None with fewer than seven covered days.
    """
    history = summary.history
    days = len(history)
    if days < MIN_COVERED_DAYS:
        return None
    shape = history if summary.shape_days is None else summary.shape_days
    counts, seasonal, _ = _shape(shape, summary.as_of)
    unbroken = _shape(history, summary.as_of)[2]
    level = summary.last_7_days / RUN_RATE_DAYS
    last_week = (
        "last-7-day run-rate"
        if run_rate_days(history)[0] == summary.as_of - dt.timedelta(days=RUN_RATE_DAYS - 1)
        else f"run-rate of the last {RUN_RATE_DAYS} covered days"
    )
    if seasonal:
        # each weekday's mean over the mean of the seven: the factors average to one, however
        # many of each weekday the usual days hold
        means = [summary.weekday_totals[w] / counts[w] for w in range(7)]
        average = sum(means, ZERO) / 7
        rates = tuple(level * means[w] / average if average > 0 else ZERO for w in range(7))
        pattern = (
            f"the last {days} days"
            if unbroken
            else f"{days} covered days of the last {HISTORY_DAYS}"
        )
        if len(shape) < days:
            unusual = days - len(shape)
            pattern += f", {unusual} unusual day{'s' * (unusual != 1)} left out"
        method = f"{last_week} shaped by the weekday pattern of {pattern}"
    else:
        rates = (level,) * 7
        covered = "" if unbroken else "covered "
        method = (
            f"run-rate of the last {RUN_RATE_DAYS} {covered}days (only {days} {covered}days of "
            "history, too few for a weekday pattern)"
        )
    return tuple(max(ZERO, r) for r in rates), method


def project_remaining(summary: SpendSummary) -> tuple[dict[dt.date, Decimal], str]:
    """Project each remaining day of the month (for charts); return them and the method.

    Nothing is projected when there is not enough history (the method says so).
    """
    found = weekday_rates(summary)
    if found is None:
        return {}, not_enough_history(summary.history_days)
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
    period), or None while too few of its days are covered (fewer than five of a month).

    With too few covered days of history, the forecast has no amount and says why.
    """
    if summary.month_days_known < min_days_known(summary.month):
        return None
    found = weekday_rates(summary)
    if found is None:
        days = summary.history_days
        return BudgetForecast(amount=None, method=not_enough_history(days), days_of_data=days)
    rates, method = found
    remaining_counts = _remaining_counts(summary.as_of, summary.month.end)
    projected = sum((rates[w] * remaining_counts[w] for w in range(7)), ZERO)
    amount = (summary.month_to_date + projected).quantize(CENT)
    return BudgetForecast(amount=amount, method=method, days_of_data=summary.month_days_known)


LOOKBACK_DAYS = HISTORY_DAYS  # a series is read this far back for its forecast

METHOD_COMPLETE = "actual (month complete)"
METHOD_PERIOD_COMPLETE = "actual (period complete)"  # a budget's day, week or quarter
METHOD_NOT_ENOUGH_HISTORY = NOT_ENOUGH_HISTORY
METHOD_RUN_RATE = "run-rate"
METHOD_WEEKDAY = "weekday run-rate"


@dataclass(frozen=True)
class Forecast:
    """A month-end forecast: what is spent, what is projected, and how it was projected.

    `amount` is None when there is not enough history to forecast (`describe` says so).
    """

    amount: Decimal | None
    method: str
    days_of_data: int  # covered days of history the projection used
    actual: Decimal = ZERO
    projected: dict[dt.date, Decimal] = field(default_factory=dict)
    unusual_days: int = 0  # history days left out of the weekday pattern (`weekday_shape`)

    def describe(self) -> str:
        """Return the method in words, e.g. `weekday run-rate over 28 days`."""
        if self.method == METHOD_NOT_ENOUGH_HISTORY:
            return not_enough_history(self.days_of_data)
        if self.method in (METHOD_COMPLETE, METHOD_PERIOD_COMPLETE):
            return self.method
        words = f"{self.method} over {self.days_of_data} day{'s' * (self.days_of_data != 1)}"
        if self.unusual_days:
            words += f", {self.unusual_days} unusual day{'s' * (self.unusual_days != 1)} left out"
        return words

    def in_words(self, money: Callable[[Decimal], str]) -> str:
        """Return `$1,234 (weekday run-rate over 28 days)`, or why there is no forecast."""
        if self.amount is None:
            return self.describe()
        return f"{money(self.amount)} ({self.describe()})"


def forecast_month(
    daily: Mapping[dt.date, Decimal],
    month: Period,
    as_of: dt.date,
    *,
    covered: Iterable[dt.date],
) -> Forecast:
    """Forecast the month's (or a budget period's) total from daily spend known through as_of.

    `covered` holds the ledger's covered days (bot/spend/coverage.py) of the history window:
    the projection is the one budget alerts use (`project_remaining` above), so a chart and
    an alert about the same budget never disagree.
    """
    actual = sum(
        (cost for day, cost in daily.items() if month.start <= day <= as_of and day < month.end),
        ZERO,
    )
    if as_of + dt.timedelta(days=1) >= month.end:
        complete = METHOD_COMPLETE if month == month_of(month.start) else METHOD_PERIOD_COMPLETE
        return Forecast(actual, complete, 0, actual)
    summary = summarize_daily(daily, as_of=as_of, covered=covered, period=month)
    if summary.history_days < MIN_COVERED_DAYS:
        return Forecast(None, METHOD_NOT_ENOUGH_HISTORY, summary.history_days, actual)
    projected, _words = project_remaining(summary)
    seasonal = is_seasonal(summary)
    method = METHOD_WEEKDAY if seasonal else METHOD_RUN_RATE
    unusual = summary.history_days - len(summary.shape_days or summary.history) if seasonal else 0
    total = actual + sum(projected.values(), ZERO)
    return Forecast(total, method, summary.history_days, actual, projected, unusual)
