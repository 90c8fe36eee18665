"""Chargeback's split and rounding: every row, column and total adds up to the cent."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.errors import RegistryError
from bot.money import CENT, CostBasis
from bot.periods import month_period
from bot.registry.spec import ChargebackSpec, parse_registry, registry_to_yaml
from bot.spend.chargeback import (
    COLUMNS,
    POOLS,
    Chargeback,
    allocate,
    largest_remainder,
    shared_pool,
    split_exactly,
)

NOV = month_period("2026-11")
D = Decimal


def charge(
    direct: dict[str, str],
    pools: dict[str, str],
    policy: ChargebackSpec | None = None,
    registry_teams: tuple[str, ...] = (),
) -> Chargeback:
    return allocate(
        period=NOV,
        currency="USD",
        basis=CostBasis.BILLED,
        direct={k: D(v) for k, v in direct.items()},
        pools={k: D(v) for k, v in pools.items()},
        policy=policy or ChargebackSpec(),
        registry_teams=registry_teams,
    )


def cells(result: Chargeback, column: str) -> dict[str, Decimal]:
    return {t.team: t.cells[column] for t in result.teams}


def test_shared_pools_are_named_by_category_service_and_attribution() -> None:
    assert shared_pool(charge_category="Tax", service="AWS Support", attribution="x") == "tax"
    assert (
        shared_pool(
            charge_category="Usage", service="AWS Support (Business)", attribution="unallocated"
        )
        == "support"
    )
    assert shared_pool(charge_category="Usage", service="Kubernetes", attribution="idle") == "idle"
    assert (
        shared_pool(charge_category="Usage", service="Amazon S3", attribution="unallocated")
        == "unallocated"
    )
    assert (
        shared_pool(charge_category=None, service=None, attribution="unallocated") == "unallocated"
    )


def test_proportional_split_follows_each_teams_own_spend() -> None:
    result = charge({"ranking": "300", "nlp": "100"}, {"unallocated": "10", "tax": "2"})
    assert cells(result, "unallocated") == {"nlp": D("2.50"), "ranking": D("7.50")}
    assert cells(result, "tax") == {"nlp": D("0.50"), "ranking": D("1.50")}
    assert result.total == D("412.00") == result.ledger_total


def test_even_split_hands_the_odd_cent_to_one_team_and_loses_none() -> None:
    policy = ChargebackSpec(split="evenly")
    result = charge({"a": "1", "b": "1", "c": "1"}, {"support": "100"}, policy)
    support = cells(result, "support")
    assert sorted(support.values()) == [D("33.33"), D("33.33"), D("33.34")]
    assert sum(support.values()) == D("100.00")


def test_fixed_shares_charge_only_the_declared_teams() -> None:
    policy = ChargebackSpec(
        split="proportional", pools={"idle": "fixed"}, shares={"a": D(60), "b": D(40)}
    )
    result = charge(
        {"a": "10", "b": "10", "c": "1000"}, {"idle": "50", "unallocated": "102"}, policy
    )
    assert cells(result, "idle") == {"a": D("30.00"), "b": D("20.00"), "c": D("0.00")}
    # the other pool is still proportional: c spent 1000 of 1020
    assert cells(result, "unallocated")["c"] == D("100.00")
    assert result.methods == {
        "unallocated": "proportional",
        "idle": "fixed",
        "support": "proportional",
        "tax": "proportional",
    }


def test_a_team_in_the_registry_with_no_spend_pays_no_proportional_share() -> None:
    result = charge({"a": "100"}, {"unallocated": "10"}, registry_teams=("a", "idle-team"))
    assert cells(result, "unallocated") == {"a": D("10.00"), "idle-team": D("0.00")}
    assert [t.team for t in result.teams] == ["a", "idle-team"]


def test_credits_in_a_pool_are_split_like_charges() -> None:
    result = charge({"a": "75", "b": "25"}, {"unallocated": "-8"})
    assert cells(result, "unallocated") == {"a": D("-6.00"), "b": D("-2.00")}
    assert result.total == D("92.00")


def test_proportional_with_no_team_spend_falls_back_to_even_and_says_so() -> None:
    result = charge({}, {"tax": "9"}, registry_teams=("a", "b", "c"))
    assert set(cells(result, "tax").values()) == {D("3.00")}
    assert result.notes == ["tax: no team spent this month, so it is split evenly"]


def test_no_team_at_all_is_refused_with_a_clear_message() -> None:
    with pytest.raises(Exception, match="no team to charge"):
        charge({}, {"unallocated": "5"})


def test_split_exactly_keeps_the_whole_amount() -> None:
    parts = split_exactly(D("100"), {"a": D(1), "b": D(1), "c": D(1)})
    assert sum(parts.values()) == D("100")


def test_largest_remainder_moves_no_value_by_a_cent() -> None:
    values = {"a": D("1.005"), "b": D("2.004"), "c": D("3.001")}
    rounded = largest_remainder(values, D("6.01"))
    assert rounded == {"a": D("1.01"), "b": D("2.00"), "c": D("3.00")}


money = st.decimals(
    min_value=-1000, max_value=100000, places=6, allow_nan=False, allow_infinity=False
)
methods = st.sampled_from(["evenly", "proportional", "fixed"])


@settings(max_examples=300, deadline=None)
@given(
    direct=st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), money, max_size=5),
    pools=st.fixed_dictionaries({pool: money for pool in POOLS}),
    pool_methods=st.fixed_dictionaries({pool: methods for pool in POOLS}),
    shares=st.dictionaries(
        st.sampled_from(["a", "b", "x"]), st.integers(1, 100).map(Decimal), min_size=1
    ),
)
def test_every_row_and_column_adds_up_and_the_total_is_the_ledgers(
    direct: dict[str, Decimal],
    pools: dict[str, Decimal],
    pool_methods: dict[str, str],
    shares: dict[str, Decimal],
) -> None:
    policy = ChargebackSpec.model_validate({"pools": pool_methods, "shares": shares})
    result = allocate(
        period=NOV,
        currency="USD",
        basis=CostBasis.BILLED,
        direct=direct,
        pools=pools,
        policy=policy,
        registry_teams=("a", "b"),
    )
    exact_total = sum(direct.values(), D(0)) + sum(pools.values(), D(0))
    assert (
        result.total == exact_total.quantize(CENT, rounding=ROUND_HALF_EVEN) == result.ledger_total
    )
    for team in result.teams:
        assert team.total == sum(team.cells[c] for c in COLUMNS)
        assert all(v == v.quantize(CENT) for v in team.cells.values())
        assert abs(team.direct - direct.get(team.team, D(0))) < CENT
    for pool in POOLS:
        assert abs(result.column_total(pool) - pools[pool]) < CENT


def test_registry_chargeback_round_trips_and_refuses_what_cannot_work() -> None:
    text = """\
teams:
  - {name: ranking}
  - {name: nlp}
chargeback:
  split: evenly
  pools: {idle: fixed, tax: proportional}
  shares: {ranking: 70, nlp: 30.5}
"""
    spec = parse_registry(text)
    assert spec.chargeback.method("idle") == "fixed"
    assert spec.chargeback.method("support") == "evenly"
    assert parse_registry(registry_to_yaml(spec)) == spec
    with pytest.raises(RegistryError, match=r"chargeback.shares.search: unknown team 'search'"):
        parse_registry(text.replace("nlp: 30.5", "search: 30.5"))
    with pytest.raises(RegistryError, match="no shares are declared"):
        parse_registry(text.replace("  shares: {ranking: 70, nlp: 30.5}\n", ""))
    with pytest.raises(RegistryError, match=r"chargeback\.split"):
        parse_registry(text.replace("split: evenly", "split: randomly"))
    with pytest.raises(RegistryError, match="more than 0"):
        parse_registry(text.replace("nlp: 30.5", "nlp: 0"))


@pytest.mark.parametrize(
    "section",
    [
        {},
        {"split": "evenly"},
        {"pools": {"tax": "fixed", "idle": "evenly"}, "shares": {"a": "60", "b": 40.5}},
        {"split": "fixed", "shares": {"a": "0.0000001", "b": "3"}},
    ],
)
def test_the_stored_policy_reads_as_the_registry_validated_it(section: dict) -> None:
    # reports read the stored JSON without pydantic (ChargebackPolicy); it must split as the
    # registry's model that validated and stored it (bot/registry/sync.py: model_dump json)
    from bot.spend.chargeback import POOLS, ChargebackPolicy

    spec = ChargebackSpec.model_validate(section)
    stored = ChargebackPolicy.from_stored(spec.model_dump(mode="json"))
    assert stored.shares == spec.shares
    assert {pool: stored.method(pool) for pool in POOLS} == {
        pool: spec.method(pool) for pool in POOLS
    }
