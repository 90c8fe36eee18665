"""What drove an anomaly: the dimension values whose spend rose most against their own baseline.

A driver is one value of one ledger dimension (a service, a usage type, a resource) within the
anomaly's scope. Its rise is that day's spend minus the median of its own daily spend over the
same baseline days as the anomaly (a day it did not appear counts as zero), so a resource that is
new that day rises by all it spent. The dimensions are a tuple of `daily_spend` column names:
another column (a training run) is one more entry.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

DRIVER_DIMENSIONS: tuple[str, ...] = ("service", "usage_type", "resource_id", "run")
DIMENSION_LABELS = {"usage_type": "usage type", "resource_id": "resource"}
TOP_DRIVERS = 3
ZERO = Decimal(0)


def dimension_label(dimension: str) -> str:
    """Return how a dimension is named to people (`resource_id` -> `resource`)."""
    return DIMENSION_LABELS.get(dimension, dimension.replace("_", " "))


@dataclass(frozen=True)
class Driver:
    """One dimension value's spend on the anomaly's day against its own usual day."""

    dimension: str
    value: str
    amount: Decimal  # spend on the day
    usual: Decimal  # median daily spend over the baseline days

    @property
    def rise(self) -> Decimal:
        """Return how much more than usual it spent that day."""
        return self.amount - self.usual

    @property
    def label(self) -> str:
        """Return `resource i-abc`."""
        return f"{dimension_label(self.dimension)} {self.value}"


def rank_drivers(
    rows: Iterable[tuple[str, str | None, dt.date, Decimal]],
    *,
    day: dt.date,
    history: Sequence[dt.date],
    dimensions: Sequence[str] = DRIVER_DIMENSIONS,
    limit: int = TOP_DRIVERS,
) -> list[Driver]:
    """Return the `limit` values that rose most on `day`, from (dimension, value, day, cost) rows.

    Only rises above zero count. Equal rises go to the more specific dimension (the later one in
    `dimensions`: a resource before the service it runs in), then to the value's name.
    """
    series: dict[tuple[str, str], dict[dt.date, Decimal]] = {}
    for dimension, value, row_day, cost in rows:
        if value is None or dimension not in dimensions:
            continue  # a row without that dimension (no usage type) drives nothing
        days = series.setdefault((dimension, value), {})
        days[row_day] = days.get(row_day, ZERO) + Decimal(cost or 0)
    drivers = []
    for (dimension, value), days in series.items():
        amount = days.get(day, ZERO)
        past = [days.get(d, ZERO) for d in history]
        usual = Decimal(statistics.median(past)) if past else ZERO
        if amount > usual:
            drivers.append(Driver(dimension, value, amount, usual))
    order = {d: i for i, d in enumerate(dimensions)}
    drivers.sort(key=lambda d: (-d.rise, -order[d.dimension], d.value))
    return drivers[:limit]


@dataclass(frozen=True)
class Expectation:
    """An owner's "Expected" for a driver: its rise up to `level` a day is not news this month."""

    scope: str
    dimension: str
    value: str
    month: str  # YYYY-MM
    since: dt.date  # the answered anomaly's day
    level: Decimal  # the driver's spend that day
    usual: Decimal  # and its usual day then

    def covers(self, day: dt.date) -> bool:
        """Return whether the expectation holds on a day: its anomaly's day to the month's end."""
        return day >= self.since and day.strftime("%Y-%m") == self.month

    def accepted(self, amount: Decimal) -> Decimal:
        """Return how much of the driver's spend on a day is expected, not anomalous.

        Its rise above the usual day, up to the rise that was accepted: spend beyond the accepted
        level is judged like any other.
        """
        return min(max(amount - self.usual, ZERO), max(self.level - self.usual, ZERO))


def accepted_spend(
    expectations: Iterable[Expectation], driver_spend: Mapping[tuple[str, str], Decimal]
) -> Decimal:
    """Return the expected part of a day's spend, from each expected driver's spend that day.

    Values of one dimension are disjoint spend, so theirs add up (the largest accepted rise per
    value); two dimensions may be the same spend (a resource and its service), so only the
    dimension accepting most counts: never more is hidden than was accepted.
    """
    best: dict[tuple[str, str], Decimal] = {}
    for expectation in expectations:
        key = (expectation.dimension, expectation.value)
        accepted = expectation.accepted(driver_spend.get(key, ZERO))
        best[key] = max(best.get(key, ZERO), accepted)
    per_dimension: dict[str, Decimal] = {}
    for (dimension, _), accepted in best.items():
        per_dimension[dimension] = per_dimension.get(dimension, ZERO) + accepted
    return max(per_dimension.values(), default=ZERO)
