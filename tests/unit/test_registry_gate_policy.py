"""The registry's per-model `gate:` policy: parsed, checked with file:line: field: problem."""

from decimal import Decimal

import pytest

from bot.errors import RegistryError
from bot.registry.spec import parse_registry, registry_to_yaml

POLICY = """\
teams:
  - {name: ranking, channel: C0RANKING}
models:
  - name: recsys
    team: ranking
    gate:
      max_monthly: 1500.50
      max_unit_cost_rise_pct: 10
      allowed_instance_families: [G5, p4d, g5]
  - {name: search, team: ranking}
"""


def test_a_policy_parses_and_families_are_lower_case_and_unique() -> None:
    spec = parse_registry(POLICY)
    gate = spec.models[0].gate
    assert gate is not None and spec.models[1].gate is None
    assert gate.max_monthly == Decimal("1500.50")
    assert gate.max_unit_cost_rise_pct == Decimal(10)
    assert gate.allowed_instance_families == ["g5", "p4d"]


def test_the_yaml_writes_the_policy_back_and_reads_the_same() -> None:
    spec = parse_registry(POLICY)
    text = registry_to_yaml(spec)
    assert "gate:" in text and "max_monthly: 1500.5\n" in text
    assert "max_unit_cost_rise_pct: 10\n" in text
    assert "gate" not in text.split("name: search", 1)[1]  # no policy, no key
    assert parse_registry(text) == spec


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "max_monthly: 1500.50",
            "max_monthly: -1",
            "registry:7: models.0.gate.max_monthly: Input should be greater than or equal to 0",
        ),
        (
            "max_monthly: 1500.50",
            "max_monthly: lots",
            "registry:7: models.0.gate.max_monthly: Input should be a valid decimal",
        ),
        (
            "max_unit_cost_rise_pct: 10",
            "max_unit_cost_rise_pct: -3",
            "registry:8: models.0.gate.max_unit_cost_rise_pct: Input should be greater than",
        ),
        (
            "[G5, p4d, g5]",
            "[g5.xlarge]",
            "registry:9: models.0.gate.allowed_instance_families: 'g5.xlarge' is not an "
            "instance family (like g5, p4d, trn1, a2 or nc); give the family, not a size",
        ),
        (
            "[G5, p4d, g5]",
            "[]",
            "registry:9: models.0.gate.allowed_instance_families: list at least one instance "
            "family, or leave the field out",
        ),
        (
            "max_monthly: 1500.50",
            "max_monthy: 1500.50",
            "registry:7: models.0.gate.max_monthy: Extra inputs are not permitted",
        ),
    ],
)
def test_policy_errors_name_the_line_and_the_field(old: str, new: str, expected: str) -> None:
    with pytest.raises(RegistryError) as info:
        parse_registry(POLICY.replace(old, new, 1))
    assert str(info.value).startswith(expected)


@pytest.mark.parametrize(
    "gate",
    [
        {"max_monthly": "12000.50"},
        {"max_unit_cost_rise_pct": 7.25, "allowed_instance_families": ["P4D", "g5"]},
        {"max_monthly": 0, "max_unit_cost_rise_pct": "10000", "allowed_instance_families": ["a2"]},
        {},
    ],
)
def test_the_gate_reads_the_stored_policy_as_the_registry_validated_it(gate: dict) -> None:
    # the gate reads the stored JSON without pydantic (bot.economics.gate.GatePolicy); what it
    # reads must be what the registry's model validated and stored
    from bot.economics.gate import GatePolicy
    from bot.registry.spec import GatePolicySpec
    from bot.registry.sync import gate_policy_json

    spec = GatePolicySpec.model_validate(gate)
    read = GatePolicy.from_stored(gate_policy_json(spec))
    assert read is not None
    assert read.max_monthly == spec.max_monthly
    assert read.max_unit_cost_rise_pct == spec.max_unit_cost_rise_pct
    assert read.allowed_instance_families == spec.allowed_instance_families
    assert GatePolicy.from_stored(gate_policy_json(None)) is None
