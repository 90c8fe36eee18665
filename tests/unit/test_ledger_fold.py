"""Arrow-side ledger work: grouping by period, attribution per distinct facts, exact folding."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from bot.ingest.attribution import AttributionRules, Attributor, ChargeFacts, ModelMatcher
from bot.ingest.ledger import LEDGER_KEYS, LEDGER_VALUES, attribute_charges
from bot.ingest.sources.base import COST_TYPE, KEY_COLUMNS, VALUE_COLUMNS, GroupedCharges

OCT, NOV = dt.date(2026, 10, 1), dt.date(2026, 11, 1)
RULES = AttributionRules.build(
    models=[ModelMatcher("recsys", "ranking")],
    teams=["ranking"],
    model_tag_keys=["ml:model"],
    stage_tag_keys=["ml:stage"],
    team_tag_keys=["team"],
)


def charge(day: dt.date, billed: str, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {c: "" for c in KEY_COLUMNS}
    row.update(
        day=day,
        billing_period=day.replace(day=1),
        provider="AWS",
        billing_account="111",
        service="Amazon Elastic Compute Cloud",
        estimated=False,
        unit="Hrs",
    )
    row.update(billed=Decimal(billed), effective=Decimal(billed), quantity=Decimal("1.5"))
    row.update(fields)
    return row


def charges_table(rows: list[dict[str, Any]]) -> pa.Table:
    schema = [pa.field(c, pa.string()) for c in KEY_COLUMNS]
    schema[0] = pa.field("day", pa.date32())
    schema[1] = pa.field("billing_period", pa.date32())
    schema[KEY_COLUMNS.index("estimated")] = pa.field("estimated", pa.bool_())
    schema.append(pa.field("tag.ml_model", pa.string()))
    schema += [pa.field(v, COST_TYPE) for v in VALUE_COLUMNS]
    return pa.Table.from_pylist(rows, schema=pa.schema(schema))


def test_grouped_charges_merge_each_period_and_count_source_rows() -> None:
    grouped = GroupedCharges(compact_every=2)
    first = charges_table([charge(dt.date(2026, 10, 3), "1.10"), charge(dt.date(2026, 11, 3), "2")])
    grouped.add(first)
    grouped.add(charges_table([charge(dt.date(2026, 10, 3), "0.0000000001")] * 2), rows=7)
    grouped.add(charges_table([charge(dt.date(2026, 11, 3), "-0.5")]))
    result = grouped.result()
    assert grouped.rows == 2 + 7 + 1
    assert grouped.billed == {"USD": Decimal("2.6000000002")}
    totals = {r["day"]: r["billed"] for r in result.to_pylist()}
    assert totals == {
        dt.date(2026, 10, 3): Decimal("1.1000000002"),
        dt.date(2026, 11, 3): Decimal("1.5"),
    }
    assert result.num_rows == 2


def test_attribution_runs_per_distinct_facts_and_folds_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[ChargeFacts] = []
    real_call = Attributor.__call__

    def counting(self: Attributor, facts: ChargeFacts) -> Any:
        calls.append(facts)
        return real_call(self, facts)

    monkeypatch.setattr(Attributor, "__call__", counting)
    day = dt.date(2026, 10, 3)
    gpu = {"resource_id": "i-1", "instance_type": "p4d.24xlarge"}
    rows = [
        # "" and null tags are the same facts; the GB-Mo row has other facts (no GPU-hours) but
        # the same ledger key, so all three fold into one ledger row.
        charge(day, "0.1", **gpu, **{"tag.ml_model": ""}),
        charge(day, "0.2", **gpu, **{"tag.ml_model": None}),
        charge(day, "0.3", **gpu, unit="GB-Mo"),
        charge(day, "1", resource_id="i-2", **{"tag.ml_model": "RecSys"}),
        charge(dt.date(2026, 11, 3), "2", resource_id="i-2", **{"tag.ml_model": "RecSys"}),
        charge(day, "5", charge_category="", **{"tag.ml_model": "other"}),
    ]
    parts = list(attribute_charges(charges_table(rows), RULES))
    assert len(calls) == 4  # distinct facts: "" and null tags, October and November i-2 share
    assert [p.column_names for p in parts] == [[*LEDGER_KEYS, *LEDGER_VALUES]] * 2
    ledger = [r for p in parts for r in p.to_pylist()]
    assert sum(r["billed_cost"] for r in ledger) == Decimal("8.6")
    p4d = [r for r in ledger if r["resource_id"] == "i-1"]
    assert len(p4d) == 1  # the hourly and the GB-Mo rows fold into one ledger row
    assert p4d[0]["billed_cost"] == Decimal("0.6")
    assert p4d[0]["usage_quantity"] == Decimal("4.5")
    assert p4d[0]["gpu_hours"] == Decimal("24")  # 8 GPUs x 3 hourly units; GB-Mo adds none
    recsys = [r for r in ledger if r["model"] == "recsys"]
    assert [(r["day"], r["team"], r["attribution"]) for r in recsys] == [
        (day, "ranking", "tag"),
        (dt.date(2026, 11, 3), "ranking", "tag"),
    ]
    other = next(r for r in ledger if r["model_tag_value"] == "other")
    assert (other["model"], other["charge_category"], other["sub_account"]) == (None, "Usage", None)


def test_nothing_to_attribute() -> None:
    assert list(attribute_charges(charges_table([]), RULES)) == []
