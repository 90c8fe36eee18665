"""The verdict logic and unit cost arithmetic, with known answers."""

from __future__ import annotations

from decimal import Decimal

import pytest

from bot.economics.verdicts import (
    Usage,
    VerdictKind,
    VerdictRules,
    change_pct,
    judge,
    unit_cost,
    unit_cost_gate_failure,
)

D = Decimal


def usage(cost: str, units: str, serving: str | None = None) -> Usage:
    stages = {"serving": D(serving)} if serving is not None else {}
    return Usage(D(cost), D(units), stages)


def test_unit_cost_is_exact_per_1k_and_by_stage() -> None:
    month = Usage(D("1500.00"), D(3_000_000), {"serving": D("600"), "training": D("900")})
    assert month.unit_cost() == D("0.5")
    assert month.unit_cost("serving") == D("0.2")
    assert month.unit_cost("storage") == D(0)
    assert unit_cost(D(1), D(3)) == D(1000) / D(3)
    assert unit_cost(D(10), D(0)) is None
    assert change_pct(D(200), D(250)) == D(25)
    assert change_pct(D(0), D(5)) is None


def test_cost_up_and_value_flat_is_a_cost_incident() -> None:
    verdict = judge(usage("1500", "1000000"), usage("1000", "1000000"))
    assert verdict.kind is VerdictKind.COST_INCIDENT and verdict.flagged
    assert "cost +50 %" in verdict.detail and "value 0 %" in verdict.detail
    assert judge(usage("1500", "900000"), usage("1000", "1000000")).kind is (
        VerdictKind.COST_INCIDENT
    )


def test_cost_up_and_value_up_faster_is_fine_because_unit_cost_fell() -> None:
    verdict = judge(usage("1500", "2000000"), usage("1000", "1000000"))
    assert verdict.kind is VerdictKind.EFFICIENT_GROWTH and not verdict.flagged
    assert "unit cost -25 %" in verdict.detail


def test_cost_up_faster_than_value_is_watched_not_flagged() -> None:
    verdict = judge(usage("1500", "1200000"), usage("1000", "1000000"))
    assert verdict.kind is VerdictKind.UNIT_COST_RISING and not verdict.flagged


def test_cost_and_no_value_for_a_full_month_is_flagged() -> None:
    assert judge(usage("800", "0"), usage("700", "0")).kind is VerdictKind.NO_VALUE
    assert judge(usage("800", "0"), None).flagged
    partial = judge(usage("800", "0"), None, full_period=False)
    assert partial.kind is VerdictKind.AWAITING_VALUE and not partial.flagged


@pytest.mark.parametrize(
    ("current", "previous", "kind"),
    [
        (("0", "0"), ("10", "10"), VerdictKind.IDLE),
        (("100", "10"), None, VerdictKind.NEW),
        (("100", "10"), ("0", "0"), VerdictKind.NEW),
        (("105", "1000"), ("100", "1000"), VerdictKind.HEALTHY),
        (("90", "1200"), ("100", "1000"), VerdictKind.HEALTHY),
        (("100", "500"), ("100", "1000"), VerdictKind.UNIT_COST_RISING),
    ],
)
def test_other_verdicts(
    current: tuple[str, str], previous: tuple[str, str] | None, kind: VerdictKind
) -> None:
    before = usage(*previous) if previous else None
    assert judge(usage(*current), before).kind is kind


def test_thresholds_are_configurable() -> None:
    strict = VerdictRules(cost_rise_pct=D(2), value_flat_pct=D(1))
    assert judge(usage("105", "1000"), usage("100", "1000"), rules=strict).kind is (
        VerdictKind.COST_INCIDENT
    )


def test_unit_cost_gate_rule() -> None:
    limit = {"max_rise_pct": D(20), "value_flat_pct": D(5)}
    assert unit_cost_gate_failure(usage("130", "1000"), usage("100", "1000"), **limit)
    assert unit_cost_gate_failure(usage("115", "1000"), usage("100", "1000"), **limit) is None
    # value rose (but less than cost): unit cost rose, yet value rising lets it pass
    assert unit_cost_gate_failure(usage("200", "1500"), usage("100", "1000"), **limit) is None
    assert unit_cost_gate_failure(usage("100", "0"), usage("100", "1000"), **limit)
    assert unit_cost_gate_failure(usage("100", "10"), None, **limit) is None


def test_unit_cost_formatting() -> None:
    from bot.economics.words import format_unit_cost, format_units

    assert format_unit_cost(D("0.6")) == "$0.60"
    assert format_unit_cost(D("0.02921")) == "$0.0292"
    assert format_unit_cost(D("0.148")) == "$0.148"
    assert format_unit_cost(D("1.5")) == "$1.50"
    assert format_unit_cost(None) == "n/a"
    assert format_units(D(1_500_000)) == "1.5M" and format_units(D(940)) == "940"
