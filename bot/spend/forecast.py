"""Month-end spend forecast from daily totals: a plain, explainable run-rate (pure).

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
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from bot.budgets.forecast import SEASONAL_MIN_HISTORY, project_remaining, summarize_daily
from bot.periods import Period

LOOKBACK_DAYS = 28
ZERO = Decimal(0)

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
    """Forecast the month's total from daily spend known up to and including as_of.

    The projection is the one budget alerts use (`bot.budgets.forecast.project_remaining`), so a
    chart and an alert about the same budget never disagree.
    """
    actual = sum(
        (cost for day, cost in daily.items() if month.start <= day <= as_of and day < month.end),
        ZERO,
    )
    if as_of + dt.timedelta(days=1) >= month.end:
        return Forecast(actual, METHOD_COMPLETE, 0, actual)
    known = [day for day in daily if day <= as_of]
    if not known:
        return Forecast(actual, METHOD_NO_DATA, 0, actual)
    summary = summarize_daily(daily, as_of=as_of, first_day=min(known))
    projected, _words = project_remaining(summary)
    method = METHOD_WEEKDAY if summary.history_days >= SEASONAL_MIN_HISTORY else METHOD_RUN_RATE
    total = actual + sum(projected.values(), ZERO)
    return Forecast(total, method, summary.history_days, actual, projected)
