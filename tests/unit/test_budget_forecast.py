"""The month-end forecast: first-days rule, run-rate, weekday seasonality (`covered`: the
ledger's covered days, here every day of the series)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal

from bot.spend.forecast import forecast_month_end, summarize_daily


def series(start: dt.date, end: dt.date, cost: Callable[[dt.date], int]) -> dict[dt.date, Decimal]:
    out = {}
    day = start
    while day <= end:
        out[day] = Decimal(cost(day))
        day += dt.timedelta(days=1)
    return out


def test_no_forecast_before_five_days_of_the_month() -> None:
    daily = series(dt.date(2026, 10, 1), dt.date(2026, 11, 5), lambda d: 100)
    for as_of in (dt.date(2026, 11, 1), dt.date(2026, 11, 4)):
        summary = summarize_daily(daily, as_of=as_of, covered=daily)
        assert forecast_month_end(summary) is None
    summary = summarize_daily(daily, as_of=dt.date(2026, 11, 5), covered=daily)
    forecast = forecast_month_end(summary)
    assert forecast is not None and forecast.days_of_data == 5


def test_flat_spend_forecasts_exactly() -> None:
    daily = series(dt.date(2026, 10, 1), dt.date(2026, 11, 10), lambda d: 110)
    summary = summarize_daily(daily, as_of=dt.date(2026, 11, 10), covered=daily)
    forecast = forecast_month_end(summary)
    assert forecast is not None and forecast.amount == Decimal("3300.00")
    assert "weekday pattern of the last 28 days" in forecast.method


def test_weekday_pattern_is_respected() -> None:
    """Spend only on weekdays: a plain run-rate would overcount the weekends left."""
    daily = series(
        dt.date(2026, 10, 1), dt.date(2026, 11, 5), lambda d: 80 if d.weekday() < 5 else 0
    )
    summary = summarize_daily(daily, as_of=dt.date(2026, 11, 5), covered=daily)
    forecast = forecast_month_end(summary)
    weekdays_in_november = 21
    assert forecast is not None and forecast.amount == Decimal(80 * weekdays_in_november)


def test_short_history_uses_a_plain_run_rate_and_says_so() -> None:
    first = dt.date(2026, 11, 1)
    daily = series(first, dt.date(2026, 11, 8), lambda d: 50 if d.day <= 4 else 100)
    summary = summarize_daily(daily, as_of=dt.date(2026, 11, 8), covered=daily)
    forecast = forecast_month_end(summary)
    assert forecast is not None
    last7 = Decimal(50 * 3 + 100 * 4)
    assert forecast.amount == (Decimal(600) + last7 / 7 * 22).quantize(Decimal("0.01"))
    assert "run-rate of the last 7 days (only 8 days of history" in forecast.method


def test_a_ledger_that_starts_mid_month_counts_only_known_days() -> None:
    first = dt.date(2026, 11, 10)
    daily = series(first, dt.date(2026, 11, 13), lambda d: 100)
    summary = summarize_daily(daily, as_of=dt.date(2026, 11, 13), covered=daily)
    assert summary.month_days_known == 4 and forecast_month_end(summary) is None
