"""AWS Cost and Usage Reports: legacy and 2.0 (Data Exports), Parquet or CSV, path or s3://."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bot.errors import IngestError
from bot.ingest.attribution import normalize_tag_key
from bot.ingest.sources.base import (
    COST_TYPE,
    TAG_PREFIX,
    VALUE_COLUMNS,
    as_date,
    as_decimal,
    as_string,
    check_days,
    check_period_end,
    tag_columns,
)
from bot.ingest.sources.files import FileSource, iter_batches
from bot.ingest.sources.formats import format_hint

# Canonical field -> candidate columns: Athena/Parquet snake_case, then CSV slash style.
COLUMNS: dict[str, tuple[str, ...]] = {
    "start": ("line_item_usage_start_date", "lineItem/UsageStartDate"),
    "end": ("line_item_usage_end_date", "lineItem/UsageEndDate"),  # checked, not kept
    "period": ("bill_billing_period_start_date", "bill/BillingPeriodStartDate"),
    "payer": ("bill_payer_account_id", "bill/PayerAccountId"),
    "account": ("line_item_usage_account_id", "lineItem/UsageAccountId"),
    "product_name": ("product_product_name", "product/ProductName"),
    "product_code": ("line_item_product_code", "lineItem/ProductCode"),
    "usage_type": ("line_item_usage_type", "lineItem/UsageType"),
    "region": ("product_region_code", "product_region", "product/region", "product/regionCode"),
    "resource_id": ("line_item_resource_id", "lineItem/ResourceId"),
    "instance_type": ("product_instance_type", "product/instanceType"),
    "item_type": ("line_item_line_item_type", "lineItem/LineItemType"),
    "unit": ("pricing_unit", "pricing/unit"),
    # the billing currency (pricing_currency is the public price list's, not the bill's)
    "currency": ("line_item_currency_code", "lineItem/CurrencyCode"),
    "unblended": ("line_item_unblended_cost", "lineItem/UnblendedCost"),
    "amount": ("line_item_usage_amount", "lineItem/UsageAmount"),
    "ri_effective": ("reservation_effective_cost", "reservation/EffectiveCost"),
    "sp_effective": (
        "savings_plan_savings_plan_effective_cost",
        "savingsPlan/SavingsPlanEffectiveCost",
    ),
    "sp_commitment": ("savings_plan_total_commitment_to_date", "savingsPlan/TotalCommitmentToDate"),
    "sp_used": ("savings_plan_used_commitment", "savingsPlan/UsedCommitment"),
    "ri_unused_upfront": (
        "reservation_unused_amortized_upfront_fee_for_billing_period",
        "reservation/UnusedAmortizedUpfrontFeeForBillingPeriod",
    ),
    "ri_unused_recurring": ("reservation_unused_recurring_fee", "reservation/UnusedRecurringFee"),
    "tags_map": ("resource_tags",),
    # CUR 2.0 keeps product attributes outside its fixed schema (the product name among them)
    # in a `product` map column
    "product_map": ("product",),
}
REQUIRED = ("start", "payer", "unblended")
# Fields grouped on as read; the canonical columns are derived from them per group.
_GROUP_FIELDS = (
    "payer",
    "account",
    "product_name",
    "product_code",
    "usage_type",
    "region",
    "resource_id",
    "instance_type",
    "item_type",
    "unit",
    "currency",
)
TAG_PREFIXES = ("resource_tags_user_", "resourceTags/user:", "resource_tags_")

_CATEGORY = {
    "Tax": "Tax",
    "Credit": "Credit",
    "Refund": "Credit",
    "BundledDiscount": "Credit",
    "EdpDiscount": "Credit",
    "PrivateRateDiscount": "Credit",
    "SavingsPlanNegation": "Credit",
    "RIFee": "Purchase",
    "Fee": "Purchase",
    "SavingsPlanUpfrontFee": "Purchase",
    "SavingsPlanRecurringFee": "Purchase",
}


class CurSource(FileSource):
    """Read CUR files; all parts of one month must be ingested together (they replace it).

    Each line keeps its line_item_currency_code; one without it is counted in `default_currency`.
    """

    kind = "cur"
    currency_field = "line_item_currency_code"
    grouped_batches = True

    def file_charges(self, path: Path, tag_keys: set[str]) -> Iterator[tuple[int, pa.Table]]:
        """Yield each batch's row count with its charges, grouped as read."""
        plan = _ColumnPlan(tag_keys)
        for batch in iter_batches(path, plan.columns_for, dictionary=True):
            yield batch.num_rows, plan.charges(batch)


class _ColumnPlan:
    """Which columns one file has (months drift), and how to turn them into charges."""

    def __init__(self, tag_keys: set[str]) -> None:
        self.tag_keys = tag_keys
        self.fields: dict[str, str] = {}
        self.tags: dict[str, str] = {}

    def columns_for(self, names: list[str]) -> list[str]:
        present = set(names)
        for field, candidates in COLUMNS.items():
            found = next((c for c in candidates if c in present), None)
            if found:
                self.fields[field] = found
        missing = [COLUMNS[f][0] for f in REQUIRED if f not in self.fields]
        if missing:
            hint = format_hint(names, "cur")
            raise IngestError(f"missing CUR column(s): {', '.join(missing)}{hint}")
        if "product_name" not in self.fields and "product_code" not in self.fields:
            raise IngestError("missing CUR column(s): line_item_product_code")
        self.tags = {
            key: column
            for key, column in tag_columns(names, TAG_PREFIXES).items()
            if key in self.tag_keys and column != "resource_tags"
        }
        return sorted({*self.fields.values(), *self.tags.values()})

    def charges(self, batch: pa.Table) -> pa.Table:
        """Group one batch by its raw columns, then make canonical charges of the few groups.

        Per row there is only the date and decimal work; string columns stay as read
        (dictionary-encoded) and everything derived from them is computed per group.
        """
        n = batch.num_rows

        def col(field: str) -> Any:
            name = self.fields.get(field)
            return batch[name] if name else None

        def money(field: str) -> pa.Array:
            return as_decimal(col(field), n, self.fields.get(field, field))

        keys: dict[str, Any] = {"day": as_date(col("start"), self.fields["start"])}
        check_days(keys["day"], self.fields["start"])
        if "end" in self.fields:
            check_period_end(col("start"), col("end"), self.fields["start"], self.fields["end"])
        if "period" in self.fields:
            keys["period"] = as_date(col("period"), self.fields["period"])
            check_days(keys["period"], self.fields["period"])
        for field in _GROUP_FIELDS:
            if field in self.fields:
                keys[field] = col(field)
        for key, column in sorted(self.tags.items()):
            keys[TAG_PREFIX + key] = batch[column]
        map_col = col("tags_map")
        if map_col is not None:
            for key in sorted(self.tag_keys - set(self.tags)):
                keys[TAG_PREFIX + key] = value_from_map(map_col, key, n)
        product_map = col("product_map")
        if product_map is not None and "product_name" not in self.fields:
            keys["product_name"] = value_from_map(product_map, "product_name", n)
        unblended = money("unblended")
        values = {
            "billed": unblended,
            "effective": self._effective(col("item_type"), unblended, money),
            "quantity": money("amount"),
        }
        grouped = pa.table({**keys, **values}).group_by(list(keys), use_threads=False)
        sums = grouped.aggregate([(v, "sum") for v in values])
        return self._canonical(
            sums.rename_columns([c.removesuffix("_sum") for c in sums.column_names])
        )

    def _canonical(self, groups: pa.Table) -> pa.Table:
        n = groups.num_rows

        def text(field: str) -> pa.Array:
            return as_string(groups[field] if field in groups.column_names else None, n)

        day = groups["day"]
        period = groups["period"] if "period" in groups.column_names else day
        period = pc.cast(
            pc.floor_temporal(pc.cast(period, pa.timestamp("s")), unit="month"), pa.date32()
        )
        name = text("product_name")
        service = pc.if_else(pc.equal(name, ""), text("product_code"), name)
        table: dict[str, Any] = {
            "day": day,
            "billing_period": period,
            "provider": pa.array(["AWS"] * n, pa.string()),
            "billing_account": text("payer"),
            "sub_account": text("account"),
            "service": service,
            "service_category": as_string(None, n),
            "usage_type": text("usage_type"),
            "region": text("region"),
            "resource_id": text("resource_id"),
            "instance_type": text("instance_type"),
            "charge_category": _categories(text("item_type")),
            "currency": text("currency"),
            "unit": text("unit"),
            "estimated": pa.array([False] * n, pa.bool_()),
        }
        for column in sorted(c for c in groups.column_names if c.startswith(TAG_PREFIX)):
            table[column] = as_string(groups[column], n)
        for value in VALUE_COLUMNS:
            table[value] = groups[value]
        return pa.table(table)

    def _effective(self, item_type: Any, unblended: pa.Array, money: Any) -> pa.Array:
        """Amortised cost, by AWS's documented CASE over the line item type."""
        if item_type is None:
            return unblended
        zero = pa.scalar(0, COST_TYPE)
        result = unblended
        rules: list[tuple[str, Any]] = []
        if "sp_effective" in self.fields:
            rules.append(("SavingsPlanCoveredUsage", money("sp_effective")))
        if "sp_commitment" in self.fields and "sp_used" in self.fields:
            rules.append(
                ("SavingsPlanRecurringFee", pc.subtract(money("sp_commitment"), money("sp_used")))
            )
        rules += [("SavingsPlanNegation", zero), ("SavingsPlanUpfrontFee", zero)]
        if "ri_effective" in self.fields:
            rules.append(("DiscountedUsage", money("ri_effective")))
        if "ri_unused_upfront" in self.fields or "ri_unused_recurring" in self.fields:
            rules.append(
                ("RIFee", pc.add(money("ri_unused_upfront"), money("ri_unused_recurring")))
            )
        for item, value in rules:
            is_item = pc.fill_null(pc.equal(item_type, item), False)
            result = pc.if_else(is_item, value, result)
        return pc.cast(result, COST_TYPE)


def _categories(item_type: pa.Array) -> pa.Array:
    result = pa.array(["Usage"] * len(item_type))
    for raw, category in _CATEGORY.items():
        result = pc.if_else(pc.equal(item_type, raw), category, result)
    return result


def value_from_map(column: Any, key: str, n: int) -> pa.Array:
    """Pick one key's value from a CUR 2.0 map column, vectorised.

    The maps are `resource_tags` (keys like `user_ml_model`) and `product` (`product_name`); keys
    are compared normalised, without a `user_` prefix. Only the distinct map keys are normalised
    in Python; the entries are matched, the first match of each row kept and scattered back to the
    rows by Arrow and NumPy. Rows without the key, or with a null value, get "".
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if len(column) == 0:
        return as_string(None, n)
    if pa.types.is_map(column.type):
        entry = pa.struct(
            [
                pa.field("key", column.type.key_type, nullable=False),
                pa.field("value", column.type.item_type),
            ]
        )
        column = column.cast(pa.list_(entry))
    entries = pc.list_flatten(column)
    parents = pc.list_parent_indices(column)
    raw_keys = entries.field("key")
    wanted = [
        k
        for k in pc.unique(raw_keys).to_pylist()
        if k is not None and normalize_tag_key(k.removeprefix("user_").removeprefix("user:")) == key
    ]
    if not wanted:
        return pa.array([""] * len(column), pa.string())
    match = pc.is_in(raw_keys, value_set=pa.array(wanted, raw_keys.type))
    rows = pc.filter(parents, match).to_numpy(zero_copy_only=False)
    values = pc.cast(pc.filter(entries.field("value"), match), pa.string())
    first = np.ones(len(rows), dtype=bool)  # parents ascend: a row's first match starts a run
    first[1:] = rows[1:] != rows[:-1]
    position = np.full(len(column), -1, dtype=np.int64)
    position[rows[first]] = np.arange(int(first.sum()), dtype=np.int64)
    picked = pc.take(pc.filter(values, pa.array(first)), pa.array(position, mask=position < 0))
    return pc.fill_null(picked, "")
