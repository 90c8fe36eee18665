"""GPU-hour anomalies, drivers and driving runs read the same covered days as spend baselines."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy.orm import Session

from bot.anomalies.detect import find_anomalies, scan_anomalies
from tests.integration.test_anomaly_runs import add
from tests.support.alert_walk import days
from tests.support.sample_registry import load_registry

DAY = dt.date(2026, 11, 14)  # 13 covered days after a gap of 22 months


def seed(session: Session, *, cost: str = "100", gpu: str = "10") -> None:
    """January 2024 and Nov 1-13 2026 of recsys training: $100 and 10 GPU-hours a day, one run;
    nothing in between. Then `cost` and `gpu` on Nov 14."""
    load_registry(session)
    for day in [*days(dt.date(2024, 1, 1), dt.date(2024, 2, 1)), *days(DAY.replace(day=1), DAY)]:
        add(session, day, "100", "run-a", gpu="10")
    add(session, DAY, cost, "run-a", gpu=gpu)
    session.flush()


def test_gpu_hours_need_the_same_covered_history_as_spend(session: Session) -> None:
    seed(session, gpu="40")  # same $100, four times the GPU-hours
    assert find_anomalies(session=session, day=DAY, min_excess=Decimal(50)) == []
    scan = scan_anomalies(session=session, first=DAY, last=DAY, min_excess=Decimal(50))
    assert scan.short_history == {"model:recsys": 13, "stage:training": 13}

    found = find_anomalies(session=session, day=DAY, min_excess=Decimal(50), min_history=13)
    assert [(a.kind, a.scope, a.baseline.days, a.baseline.median) for a in found] == [
        ("gpu", "model:recsys", 13, Decimal(10))
    ]
    assert found[0].resources == [("i-run-a", Decimal(30), False)]  # 40 over its usual 10 a day


def test_drivers_and_the_driving_run_rise_over_covered_days_only(session: Session) -> None:
    seed(session, cost="300")
    [spend, stage] = find_anomalies(
        session=session, day=DAY, min_excess=Decimal(50), min_history=13
    )
    assert (spend.scope, stage.scope) == ("model:recsys", "stage:training")
    assert spend.excess_cost == 200  # over the usual $100, not over a median of empty days
    assert spend.run is not None and spend.run.increase == 200
    assert spend.drivers and {d.usual for d in spend.drivers} == {100}  # each driver's too
