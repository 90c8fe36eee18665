"""Robust baselines: median and MAD, a minimum dollar impact, enough history."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from bot.anomalies.detect import detect, is_anomalous, robust_baseline

DAY = dt.date(2026, 11, 20)
FIRST = dt.date(2026, 10, 1)


def history(values: list[int]) -> dict[dt.date, Decimal]:
    return {DAY - dt.timedelta(days=i + 1): Decimal(v) for i, v in enumerate(values)}


def test_baseline_ignores_a_past_spike() -> None:
    baseline = robust_baseline([Decimal(v) for v in [100] * 20 + [5000]])
    assert baseline.median == 100 and baseline.spread == 0
    assert is_anomalous(Decimal(400), baseline, min_excess=Decimal(100))
    assert not is_anomalous(Decimal(109), baseline, min_excess=Decimal(1))  # within 10 %


def test_minimum_dollar_impact_keeps_pennies_quiet() -> None:
    series = {"tiny": {**history([2] * 28), DAY: Decimal(50)}}
    assert detect(series, day=DAY, first_day=FIRST, min_excess=Decimal(100)) == []
    assert detect(series, day=DAY, first_day=FIRST, min_excess=Decimal(10))[0][0] == "tiny"


def test_noisy_series_needs_a_bigger_jump() -> None:
    noisy = [100, 140, 60, 120, 80] * 6
    baseline = robust_baseline([Decimal(v) for v in noisy[:28]])
    assert not is_anomalous(Decimal(180), baseline, min_excess=Decimal(10))
    assert is_anomalous(Decimal(300), baseline, min_excess=Decimal(10))


def test_too_little_history_never_alerts() -> None:
    series = {"new": {**history([10] * 10), DAY: Decimal(10_000)}}
    assert (
        detect(series, day=DAY, first_day=DAY - dt.timedelta(days=10), min_excess=Decimal(1)) == []
    )
