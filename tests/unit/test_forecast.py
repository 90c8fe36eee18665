"""The month-end forecast: actual to date plus an explainable projection."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from bot.periods import month_period
from bot.spend.forecast import (
    METHOD_COMPLETE,
    METHOD_NOT_ENOUGH_HISTORY,
    METHOD_RUN_RATE,
    METHOD_WEEKDAY,
    forecast_month,
    forecast_month_end,
    summarize_daily,
)

NOV = month_period("2026-11")


def days(start: dt.date, n: int) -> list[dt.date]:
    return [start + dt.timedelta(days=i) for i in range(n)]


def test_complete_month_is_the_actual_total() -> None:
    daily = {d: Decimal(10) for d in days(NOV.start, 30)}
    result = forecast_month(daily, NOV, dt.date(2026, 11, 30), covered=daily)
    assert (result.amount, result.method, result.projected) == (Decimal(300), METHOD_COMPLETE, {})


def test_no_covered_days_forecast_nothing_and_say_so() -> None:
    result = forecast_month({}, NOV, dt.date(2026, 11, 10), covered=[])
    assert (result.amount, result.method, result.projected) == (
        None,
        METHOD_NOT_ENOUGH_HISTORY,
        {},
    )
    assert result.describe() == (
        "not enough history to forecast (0 covered days in the last 28; 7 needed)"
    )


def test_fewer_than_seven_covered_days_give_no_number() -> None:
    daily = {d: Decimal(100) for d in days(dt.date(2026, 11, 1), 6)}
    result = forecast_month(daily, NOV, dt.date(2026, 11, 6), covered=daily)
    assert result.amount is None and result.projected == {}
    assert result.actual == Decimal(600)
    assert result.describe() == (
        "not enough history to forecast (6 covered days in the last 28; 7 needed)"
    )
    seven = {**daily, dt.date(2026, 10, 31): Decimal(100)}
    assert forecast_month(seven, NOV, dt.date(2026, 11, 6), covered=seven).amount == 3000


def test_a_gap_is_left_out_of_the_weekday_pattern_not_counted_as_zero() -> None:
    """Four weeks of weekdays at 100 and weekends at 20, but no source covered the second
    week: the pattern of the three covered weeks is the same pattern."""
    history = days(dt.date(2026, 10, 24), 28)  # to 2026-11-20, a Friday
    gap = set(days(dt.date(2026, 10, 31), 7))
    covered = [d for d in history if d not in gap]
    daily = {d: Decimal(20) if d.weekday() >= 5 else Decimal(100) for d in covered}
    result = forecast_month(daily, NOV, dt.date(2026, 11, 20), covered=covered)
    assert result.method == METHOD_WEEKDAY
    assert result.days_of_data == 21
    assert result.projected[dt.date(2026, 11, 21)] == Decimal(20)  # Saturday
    assert result.projected[dt.date(2026, 11, 23)] == Decimal(100)  # Monday


def test_the_run_rate_is_the_mean_of_the_last_seven_covered_days() -> None:
    """Nov 1-10 covered at 100, Nov 11-13 not yet (a billing delay): the level is 100, not
    the 400 of the last seven calendar days spread over seven."""
    daily = {d: Decimal(100) for d in days(dt.date(2026, 11, 1), 10)}
    result = forecast_month(daily, NOV, dt.date(2026, 11, 13), covered=daily)
    assert set(result.projected.values()) == {Decimal(100)}
    assert result.days_of_data == 10


def test_short_history_uses_a_flat_run_rate() -> None:
    daily = {d: Decimal(100) for d in days(dt.date(2026, 11, 1), 10)}
    result = forecast_month(daily, NOV, dt.date(2026, 11, 10), covered=daily)
    assert result.method == METHOD_RUN_RATE
    assert result.days_of_data == 10
    assert result.actual == Decimal(1000)
    assert result.amount == Decimal(3000)
    assert result.describe() == "run-rate over 10 days"


def test_weekday_seasonality_carries_quiet_weekends_forward() -> None:
    # Four weeks of history: weekdays cost 100, weekends 20.
    history = days(dt.date(2026, 10, 24), 28)  # to 2026-11-20, a Friday
    daily = {d: Decimal(20) if d.weekday() >= 5 else Decimal(100) for d in history}
    result = forecast_month(daily, NOV, dt.date(2026, 11, 20), covered=history)
    assert result.method == METHOD_WEEKDAY
    assert result.days_of_data == 28
    assert result.projected[dt.date(2026, 11, 21)] == Decimal(20)  # Saturday
    assert result.projected[dt.date(2026, 11, 23)] == Decimal(100)  # Monday
    # Nov 1-20 has 5 weekend days and 15 weekdays; Nov 21-30 has 4 and 6.
    assert result.actual == Decimal(5 * 20 + 15 * 100)
    assert result.amount == result.actual + Decimal(4 * 20 + 6 * 100)
    assert result.describe() == "weekday run-rate over 28 days"


def test_covered_days_without_rows_count_as_zero_and_credits_never_project_negative() -> None:
    daily = {dt.date(2026, 11, 1): Decimal(50), dt.date(2026, 11, 3): Decimal(-80)}
    covered = days(dt.date(2026, 10, 28), 7)  # the ledger covers them: the scope spent nothing
    result = forecast_month(daily, NOV, dt.date(2026, 11, 3), covered=covered)
    assert result.days_of_data == 7
    assert all(v == 0 for v in result.projected.values())
    assert result.amount == Decimal(-30)


@given(
    st.lists(st.decimals(min_value=0, max_value=10_000, places=2), min_size=1, max_size=60),
    st.integers(min_value=0, max_value=29),
)
def test_forecast_is_at_least_the_actual_and_covers_every_remaining_day(
    costs: list[Decimal], as_of_day: int
) -> None:
    as_of = NOV.start + dt.timedelta(days=as_of_day)
    daily = dict(
        zip(days(as_of - dt.timedelta(days=len(costs) - 1), len(costs)), costs, strict=True)
    )
    result = forecast_month(daily, NOV, as_of, covered=daily)
    if result.amount is None:  # fewer than seven covered days: no number
        assert len(costs) < 7 and result.projected == {}
        return
    assert result.amount >= result.actual
    assert sorted(result.projected) == days(as_of + dt.timedelta(days=1), 29 - as_of_day)


def test_an_unusual_day_is_left_out_of_the_weekday_pattern() -> None:
    # Four weeks of weekdays at 100 and weekends at 20, and one Tuesday spike of 2,000 (a day
    # the anomaly rule flags, answered Expected or not): next Tuesday is a usual Tuesday.
    history = days(dt.date(2026, 10, 24), 28)  # to 2026-11-20, a Friday
    daily = {d: Decimal(20) if d.weekday() >= 5 else Decimal(100) for d in history}
    daily[dt.date(2026, 11, 3)] = Decimal(2000)  # a Tuesday, before the run-rate's week
    result = forecast_month(daily, NOV, dt.date(2026, 11, 20), covered=history)
    assert result.method == METHOD_WEEKDAY
    assert result.projected[dt.date(2026, 11, 24)] == Decimal(100)  # Tuesday
    assert result.projected[dt.date(2026, 11, 23)] == Decimal(100)  # Monday
    assert result.projected[dt.date(2026, 11, 21)] == Decimal(20)  # Saturday
    assert result.describe() == "weekday run-rate over 28 days, 1 unusual day left out"
    summary = summarize_daily(daily, as_of=dt.date(2026, 11, 20), covered=history)
    forecast = forecast_month_end(summary)
    assert forecast is not None
    assert forecast.method == (
        "last-7-day run-rate shaped by the weekday pattern of the last 28 days, "
        "1 unusual day left out"
    )


def test_a_scope_spending_on_few_days_keeps_them_as_its_pattern() -> None:
    # A weekly batch job: Mondays only. Its median day is $0, so its Mondays are its shape.
    history = days(dt.date(2026, 10, 24), 28)
    daily = {d: Decimal(700) for d in history if d.weekday() == 0}
    result = forecast_month(daily, NOV, dt.date(2026, 11, 20), covered=history)
    assert result.projected[dt.date(2026, 11, 23)] == Decimal(700)  # Monday
    assert result.projected[dt.date(2026, 11, 24)] == Decimal(0)
