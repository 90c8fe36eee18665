"""Anomaly drivers (pure): each dimension value's rise against its own usual day, and how much
of a day's spend an Expected answer accepts."""

from __future__ import annotations

import datetime as dt
import random
import statistics
from decimal import Decimal

from bot.anomalies.drivers import (
    DRIVER_DIMENSIONS,
    Driver,
    Expectation,
    accepted_spend,
    dimension_label,
    rank_drivers,
)

DAY = dt.date(2026, 11, 18)
HISTORY = [DAY - dt.timedelta(days=i) for i in range(28, 0, -1)]


def rows_for(day: dt.date, service: str, usage: str | None, resource: str, cost: str) -> list:
    """The (dimension, value, day, cost) rows one ledger line gives, one per dimension."""
    amount = Decimal(cost)
    return [
        ("service", service, day, amount),
        ("usage_type", usage, day, amount),
        ("resource_id", resource, day, amount),
    ]


def test_the_resource_that_jumped_leads_and_a_steady_one_is_not_a_driver() -> None:
    rows = []
    for day in HISTORY:
        rows += rows_for(day, "EC2", "BoxUsage:p4d", "i-train", "400")
        rows += rows_for(day, "SageMaker", "Host:g5", "endpoint/prod", "130")
    rows += rows_for(DAY, "EC2", "BoxUsage:p4d", "i-train", "1900")
    rows += rows_for(DAY, "EC2", "BoxUsage:p4d", "i-new", "250")  # never seen before
    rows += rows_for(DAY, "SageMaker", "Host:g5", "endpoint/prod", "130")
    drivers = rank_drivers(rows, day=DAY, history=HISTORY)
    # EC2 and its usage type carry both instances: +1,750; i-train alone +1,500
    assert [(d.dimension, d.value, d.amount, d.usual, d.rise) for d in drivers] == [
        ("usage_type", "BoxUsage:p4d", Decimal(2150), Decimal(400), Decimal(1750)),
        ("service", "EC2", Decimal(2150), Decimal(400), Decimal(1750)),
        ("resource_id", "i-train", Decimal(1900), Decimal(400), Decimal(1500)),
    ]
    everything = rank_drivers(rows, day=DAY, history=HISTORY, limit=10)
    assert ("resource_id", "i-new", Decimal(250)) in [
        (d.dimension, d.value, d.rise) for d in everything
    ]
    assert all(d.value != "endpoint/prod" for d in everything)  # steady: no rise


def test_equal_rises_go_to_the_more_specific_dimension() -> None:
    rows = rows_for(DAY, "EC2", "BoxUsage:p4d", "i-train", "900")
    drivers = rank_drivers(rows, day=DAY, history=HISTORY)
    assert [d.dimension for d in drivers] == ["resource_id", "usage_type", "service"]
    assert drivers[0].label == "resource i-train"


def test_a_row_without_a_value_drives_nothing_and_a_new_dimension_is_one_more_entry() -> None:
    rows = [*rows_for(DAY, "EC2", None, "i-train", "900"), ("run", "job-7", DAY, Decimal(900))]
    without_run = ("service", "usage_type", "resource_id")
    assert [
        d.dimension for d in rank_drivers(rows, day=DAY, history=HISTORY, dimensions=without_run)
    ] == [
        "resource_id",
        "service",
    ]  # `run` is read only when it is one of the dimensions
    assert "run" in DRIVER_DIMENSIONS
    with_run = rank_drivers(rows, day=DAY, history=HISTORY)
    assert with_run[0] == Driver("run", "job-7", Decimal(900), Decimal(0))
    assert dimension_label("run") == "run" and dimension_label("usage_type") == "usage type"


def test_drivers_match_an_independent_median_on_random_ledgers() -> None:
    rng = random.Random(14)
    for _ in range(30):
        rows = []
        truth: dict[tuple[str, str], dict[dt.date, Decimal]] = {}
        for day in [*HISTORY, DAY]:
            for _ in range(rng.randint(0, 4)):
                resource = f"r{rng.randint(1, 5)}"
                service = f"s{rng.randint(1, 2)}"
                cost = Decimal(rng.randint(0, 50_000)) / 100
                rows += rows_for(day, service, f"u-{service}", resource, str(cost))
                for key in (
                    ("service", service),
                    ("usage_type", f"u-{service}"),
                    ("resource_id", resource),
                ):
                    truth.setdefault(key, {})
                    truth[key][day] = truth[key].get(day, Decimal(0)) + cost
        expected = []
        for (dimension, value), by_day in truth.items():
            usual = Decimal(statistics.median([by_day.get(d, Decimal(0)) for d in HISTORY]))
            rise = by_day.get(DAY, Decimal(0)) - usual
            if rise > 0:
                expected.append((dimension, value, rise))
        got = rank_drivers(rows, day=DAY, history=HISTORY, limit=100)
        assert sorted((d.dimension, d.value, d.rise) for d in got) == sorted(expected)
        assert [d.rise for d in got] == sorted((d.rise for d in got), reverse=True)


def expectation(dimension: str = "resource_id", value: str = "i-train") -> Expectation:
    return Expectation(
        scope="model:recsys",
        dimension=dimension,
        value=value,
        month="2026-11",
        since=DAY,
        level=Decimal(1900),
        usual=Decimal(400),
    )


def test_an_expectation_accepts_the_rise_up_to_its_level_for_the_rest_of_the_month() -> None:
    answered = expectation()
    assert answered.covers(DAY) and answered.covers(dt.date(2026, 11, 30))
    assert not answered.covers(dt.date(2026, 12, 1)) and not answered.covers(DAY - dt.timedelta(1))
    assert answered.accepted(Decimal(300)) == 0  # below its usual day: nothing to accept
    assert answered.accepted(Decimal(1200)) == Decimal(800)
    assert answered.accepted(Decimal(1900)) == Decimal(1500)
    assert answered.accepted(Decimal(5000)) == Decimal(1500)  # beyond the level: judged


def test_accepted_spend_never_counts_the_same_spend_twice() -> None:
    resource, service = expectation(), expectation("service", "EC2")
    other = expectation(value="i-other")
    spend = {
        ("resource_id", "i-train"): Decimal(1900),
        ("resource_id", "i-other"): Decimal(600),
        ("service", "EC2"): Decimal(2500),
    }
    # two resources are disjoint spend: they add up
    assert accepted_spend([resource, other], spend) == Decimal(1500) + Decimal(200)
    # a resource and its service may be the same dollars: only the larger counts
    assert accepted_spend([resource, service], spend) == Decimal(1500)
    assert accepted_spend([resource, resource], spend) == Decimal(1500)
    assert accepted_spend([], spend) == 0
