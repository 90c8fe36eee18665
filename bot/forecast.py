"""Month-end spend forecast from daily totals: a plain, explainable run-rate (pure).

The forecast is deliberately simple so anyone can check it by hand:

* days of the month up to and including ``as_of`` count as **actual** spend (a day with no row
  counts as zero: the ledger keeps zero-spend days implicit);
* each remaining day is projected from the **history window**, the last ``LOOKBACK_DAYS`` days up
  to ``as_of`` (days before the first day with data are not part of it);
* with at least ``SEASONAL_MIN_DAYS`` days of history the projection is the mean of the last seven
  days scaled by a **weekday factor** (that weekday's mean over the window / the window's mean),
  so quiet weekends and busy Mondays are carried forward; otherwise it is a flat **run-rate**, the
  mean of the days there are;
* a projected day is never negative (credits are real, but not a trend to extrapolate).

`Forecast.method` says which of these was used, so a message can show it next to the number.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from bot.periods import Period

LOOKBACK_DAYS = 28
SEASONAL_MIN_DAYS = 14
RECENT_DAYS = 7
ZERO = Decimal(0)
QUANTUM = Decimal("0.0000000001")

METHOD_COMPLETE = "actual (month complete)"
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
        if self.method in (METHOD_COMPLETE, METHOD_NO_DATA):
            return self.method
        return f"{self.method} over {self.days_of_data} day{'s' * (self.days_of_data != 1)}"


def forecast_month(daily: Mapping[dt.date, Decimal], month: Period, as_of: dt.date) -> Forecast:
    """Forecast the month's total from daily spend known up to and including as_of."""
    actual = sum(
        (cost for day, cost in daily.items() if month.start <= day <= as_of and day < month.end),
        ZERO,
    )
    remaining = _days(max(month.start, as_of + dt.timedelta(days=1)), month.end)
    if not remaining:
        return Forecast(actual, METHOD_COMPLETE, 0, actual)
    history = _history(daily, as_of)
    if not history:
        return Forecast(actual, METHOD_NO_DATA, 0, actual)
    if len(history) >= SEASONAL_MIN_DAYS:
        method = METHOD_WEEKDAY
        per_day = _weekday_projection(history, remaining)
    else:
        method = METHOD_RUN_RATE
        rate = sum(history.values(), ZERO) / len(history)
        per_day = {day: rate for day in remaining}
    # Quantize to the ledger's precision so repeated division leaves no 1e-26 dust.
    projected = {day: max(ZERO, value.quantize(QUANTUM)) for day, value in per_day.items()}
    total = actual + sum(projected.values(), ZERO)
    return Forecast(total, method, len(history), actual, projected)


def _days(start: dt.date, end: dt.date) -> list[dt.date]:
    return [start + dt.timedelta(days=i) for i in range((end - start).days)]


def _history(daily: Mapping[dt.date, Decimal], as_of: dt.date) -> dict[dt.date, Decimal]:
    """The lookback window up to as_of, from the first day with data; missing days are zero."""
    known = [day for day in daily if day <= as_of]
    if not known:
        return {}
    start = max(min(known), as_of - dt.timedelta(days=LOOKBACK_DAYS - 1))
    return {day: daily.get(day, ZERO) for day in _days(start, as_of + dt.timedelta(days=1))}


def _weekday_projection(
    history: dict[dt.date, Decimal], remaining: list[dt.date]
) -> dict[dt.date, Decimal]:
    days = sorted(history)
    recent = days[-RECENT_DAYS:]
    level = sum((history[d] for d in recent), ZERO) / len(recent)
    overall = sum(history.values(), ZERO) / len(history)
    if overall == 0:
        return {day: level for day in remaining}
    by_weekday: dict[int, list[Decimal]] = {}
    for day in days:
        by_weekday.setdefault(day.weekday(), []).append(history[day])
    weekday_mean = {w: sum(v, ZERO) / len(v) for w, v in by_weekday.items()}
    return {day: level * weekday_mean.get(day.weekday(), overall) / overall for day in remaining}
