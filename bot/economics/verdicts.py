"""Unit economics and the cost-versus-value verdict: plain values in, plain values out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum

PER_UNITS = Decimal(1000)  # unit cost reads best per 1k predictions


@dataclass(frozen=True)
class Usage:
    """What one model cost and what it produced over one period."""

    cost: Decimal
    units: Decimal
    cost_by_stage: Mapping[str, Decimal] = field(default_factory=dict)
    revenue: Decimal | None = None

    def unit_cost(self, stage: str | None = None) -> Decimal | None:
        """Return cost per 1k units (of one stage, or in total); None without units."""
        cost = self.cost if stage is None else self.cost_by_stage.get(stage, Decimal(0))
        return unit_cost(cost, self.units)


def unit_cost(cost: Decimal, units: Decimal, per: Decimal = PER_UNITS) -> Decimal | None:
    """Return cost per `per` units, exactly; None when there are no units."""
    if units <= 0:
        return None
    return cost * per / units


def change_pct(before: Decimal | None, after: Decimal | None) -> Decimal | None:
    """Return the change from before to after in percent; None when it is undefined."""
    if before is None or after is None or before == 0:
        return None
    return (after - before) * 100 / before


class VerdictKind(StrEnum):
    NO_VALUE = "no_value"
    COST_INCIDENT = "cost_incident"
    UNIT_COST_RISING = "unit_cost_rising"
    EFFICIENT_GROWTH = "efficient_growth"
    HEALTHY = "healthy"
    NEW = "new"
    AWAITING_VALUE = "awaiting_value"
    IDLE = "idle"


FLAGGED = (VerdictKind.NO_VALUE, VerdictKind.COST_INCIDENT)


@dataclass(frozen=True)
class VerdictRules:
    """Cost rising by more than cost_rise_pct is "cost up"; value within value_flat_pct is flat."""

    cost_rise_pct: Decimal = Decimal(10)
    value_flat_pct: Decimal = Decimal(5)


@dataclass(frozen=True)
class Verdict:
    kind: VerdictKind
    headline: str
    detail: str

    @property
    def flagged(self) -> bool:
        """Return whether the verdict asks for action (cost incident, or cost with no value)."""
        return self.kind in FLAGGED


def _pct(value: Decimal | None) -> str:
    if value is None:
        return "n/a"
    rounded = value.quantize(Decimal(1))
    return f"{'+' if rounded > 0 else ''}{rounded} %"


def judge(
    current: Usage,
    previous: Usage | None,
    *,
    full_period: bool = True,
    rules: VerdictRules = VerdictRules(),
) -> Verdict:
    """Judge a period's cost against its value, compared with the previous period."""
    if current.cost <= 0:
        return Verdict(VerdictKind.IDLE, "No cost", "nothing was spent in the period")
    if current.units <= 0:
        if full_period:
            return Verdict(
                VerdictKind.NO_VALUE,
                "Cost with no value",
                "it cost money all period and recorded no value at all",
            )
        return Verdict(
            VerdictKind.AWAITING_VALUE, "No value yet", "no value recorded so far in this period"
        )
    if previous is None or previous.cost <= 0 or previous.units <= 0:
        return Verdict(VerdictKind.NEW, "New", "no comparable previous period")
    cost = change_pct(previous.cost, current.cost)
    value = change_pct(previous.units, current.units)
    per_unit = change_pct(previous.unit_cost(), current.unit_cost())
    assert cost is not None and value is not None  # both previous values are positive
    numbers = f"cost {_pct(cost)}, value {_pct(value)}, unit cost {_pct(per_unit)}"
    if cost > rules.cost_rise_pct:
        if value <= rules.value_flat_pct:
            return Verdict(
                VerdictKind.COST_INCIDENT,
                "Cost incident",
                f"cost up, value flat or down: {numbers}",
            )
        if value >= cost:
            return Verdict(
                VerdictKind.EFFICIENT_GROWTH,
                "Growing efficiently",
                f"cost up, value up faster (unit cost fell): {numbers}",
            )
        return Verdict(
            VerdictKind.UNIT_COST_RISING,
            "Unit cost rising",
            f"cost up faster than value: {numbers}",
        )
    if per_unit is not None and per_unit > rules.cost_rise_pct:
        return Verdict(
            VerdictKind.UNIT_COST_RISING,
            "Unit cost rising",
            f"value fell faster than cost: {numbers}",
        )
    return Verdict(VerdictKind.HEALTHY, "Healthy", numbers)


def unit_cost_gate_failure(
    current: Usage, previous: Usage | None, *, max_rise_pct: Decimal, value_flat_pct: Decimal
) -> str | None:
    """Return why unit cost rose past the limit without value rising, or None when it did not."""
    if previous is None:
        return None
    before, after = previous.unit_cost(), current.unit_cost()
    if before is not None and after is None and current.cost > 0:
        return "it cost money and recorded no value, where it had value before"
    rise = change_pct(before, after)
    if rise is None or rise <= max_rise_pct:
        return None
    value = change_pct(previous.units, current.units)
    if value is not None and value > value_flat_pct:
        return None
    return (
        f"unit cost rose {_pct(rise)} (limit {_pct(max_rise_pct)}) while value changed "
        f"{_pct(value)}"
    )
