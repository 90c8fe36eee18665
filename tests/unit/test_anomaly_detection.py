"""Robust baselines: median and MAD, a minimum dollar impact, enough history."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from bot.anomalies.detect import baseline_days, detect, is_anomalous, robust_baseline

DAY = dt.date(2026, 11, 20)
FIRST = dt.date(2026, 10, 1)
EVERY_DAY = [FIRST + dt.timedelta(days=i) for i in range((DAY - FIRST).days + 1)]


def history(values: list[int]) -> dict[dt.date, Decimal]:
    return {DAY - dt.timedelta(days=i + 1): Decimal(v) for i, v in enumerate(values)}


def test_baseline_ignores_a_past_spike() -> None:
    baseline = robust_baseline([Decimal(v) for v in [100] * 20 + [5000]])
    assert baseline.median == 100 and baseline.spread == 0
    assert is_anomalous(Decimal(400), baseline, min_excess=Decimal(100))
    assert not is_anomalous(Decimal(109), baseline, min_excess=Decimal(1))  # within 10 %


def test_minimum_dollar_impact_keeps_pennies_quiet() -> None:
    series = {"tiny": {**history([2] * 28), DAY: Decimal(50)}}
    window = baseline_days(DAY, EVERY_DAY)
    assert detect(series, day=DAY, history=window, min_excess=Decimal(100)) == []
    assert detect(series, day=DAY, history=window, min_excess=Decimal(10))[0][0] == "tiny"


def test_noisy_series_needs_a_bigger_jump() -> None:
    noisy = [100, 140, 60, 120, 80] * 6
    baseline = robust_baseline([Decimal(v) for v in noisy[:28]])
    assert not is_anomalous(Decimal(180), baseline, min_excess=Decimal(10))
    assert is_anomalous(Decimal(300), baseline, min_excess=Decimal(10))


def test_too_little_history_never_alerts() -> None:
    series = {"new": {**history([10] * 10), DAY: Decimal(10_000)}}
    covered = list(series["new"])
    assert detect(series, day=DAY, history=baseline_days(DAY, covered), min_excess=Decimal(1)) == []
    # the minimum is a setting (MLCOST_ANOMALY_MIN_HISTORY_DAYS)
    found = detect(
        series, day=DAY, history=baseline_days(DAY, covered), min_excess=Decimal(1), min_history=10
    )
    assert [key for key, *_ in found] == ["new"]


def test_the_baseline_window_holds_only_covered_days() -> None:
    covered = [DAY - dt.timedelta(days=d) for d in (40, 28, 27, 3, 1)] + [DAY]
    assert baseline_days(DAY, sorted(covered)) == sorted(
        DAY - dt.timedelta(days=d) for d in (28, 27, 3, 1)
    )


def test_a_covered_day_without_spend_is_zero_an_uncovered_one_is_unknown() -> None:
    # "new" spent $0 on 14 covered days (others spent): a $500 day is unusual
    covered = [DAY - dt.timedelta(days=d) for d in range(1, 15)]
    series = {"other": {d: Decimal(100) for d in covered}, "new": {DAY: Decimal(500)}}
    found = detect(series, day=DAY, history=covered, min_excess=Decimal(100))
    assert [(key, baseline.days, baseline.median) for key, _, baseline, _ in found] == [
        ("new", 14, 0)
    ]
    # with only 13 of those days covered (a gap in the ledger), nothing can be judged
    assert detect(series, day=DAY, history=covered[1:], min_excess=Decimal(100)) == []
