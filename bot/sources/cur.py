"""AWS Cost and Usage Reports: legacy and 2.0 (Data Exports), Parquet or CSV, path or s3://."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from bot.attribution import normalize_tag_key
from bot.errors import IngestError
from bot.sources.base import (
    COST_TYPE,
    TAG_PREFIX,
    GroupedCharges,
    Progress,
    SourceData,
    as_date,
    as_decimal,
    as_string,
    period_scopes,
    tag_columns,
)
from bot.sources.files import expand_locations, iter_batches, local_copy

# Canonical field -> candidate columns: Athena/Parquet snake_case, then CSV slash style.
COLUMNS: dict[str, tuple[str, ...]] = {
    "start": ("line_item_usage_start_date", "lineItem/UsageStartDate"),
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
    "unblended": ("line_item_unblended_cost", "lineItem/UnblendedCost"),
    "amount": ("line_item_usage_amount", "lineItem/UsageAmount"),
    "ri_effective": ("reservation_effective_cost", "reservation/EffectiveCost"),
    "sp_effective": (
        "savings_plan_savings_plan_effective_cost", "savingsPlan/SavingsPlanEffectiveCost"),
    "sp_commitment": (
        "savings_plan_total_commitment_to_date", "savingsPlan/TotalCommitmentToDate"),
    "sp_used": ("savings_plan_used_commitment", "savingsPlan/UsedCommitment"),
    "ri_unused_upfront": (
        "reservation_unused_amortized_upfront_fee_for_billing_period",
        "reservation/UnusedAmortizedUpfrontFeeForBillingPeriod"),
    "ri_unused_recurring": (
        "reservation_unused_recurring_fee", "reservation/UnusedRecurringFee"),
    "tags_map": ("resource_tags",),
}  # fmt: skip
REQUIRED = ("start", "payer", "unblended")
TAG_PREFIXES = ("resource_tags_user_", "resourceTags/user:", "resource_tags_")

_CATEGORY = {
    "Tax": "Tax", "Credit": "Credit", "Refund": "Credit", "BundledDiscount": "Credit",
    "EdpDiscount": "Credit", "PrivateRateDiscount": "Credit", "SavingsPlanNegation": "Credit",
    "RIFee": "Purchase", "Fee": "Purchase", "SavingsPlanUpfrontFee": "Purchase",
    "SavingsPlanRecurringFee": "Purchase",
}  # fmt: skip


class CurSource:
    """Read CUR files; all parts of one month must be ingested together (they replace it)."""

    kind = "cur"

    def __init__(self, locations: list[str], s3_client: Any | None = None) -> None:
        self.locations = locations
        self.location = " ".join(locations)
        self._s3 = s3_client

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        grouped = GroupedCharges()
        for location in expand_locations(self.locations, self._s3):
            with local_copy(location, self._s3) as path:
                plan = _ColumnPlan(tag_keys)
                try:
                    for batch in iter_batches(path, plan.columns_for):
                        grouped.add(plan.canonical(batch))
                        if progress:
                            progress(batch.num_rows)
                except IngestError as exc:
                    message = str(exc)
                    if message.startswith(path.name + ": "):
                        message = message[len(path.name) + 2 :]
                    raise IngestError(f"{location}: {message}") from None
        charges = grouped.result()
        return SourceData(
            charges=charges,
            rows_read=grouped.rows,
            billed_total=grouped.billed,
            effective_total=grouped.effective,
            scopes=period_scopes(charges),
        )


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
            raise IngestError(f"missing CUR column(s): {', '.join(missing)}")
        if "product_name" not in self.fields and "product_code" not in self.fields:
            raise IngestError("missing CUR column(s): line_item_product_code")
        self.tags = {
            key: column
            for key, column in tag_columns(names, TAG_PREFIXES).items()
            if key in self.tag_keys and column != "resource_tags"
        }
        return sorted({*self.fields.values(), *self.tags.values()})

    def canonical(self, batch: pa.Table) -> pa.Table:
        n = batch.num_rows

        def col(field: str) -> Any:
            name = self.fields.get(field)
            return batch[name] if name else None

        def money(field: str) -> pa.Array:
            return as_decimal(col(field), n, self.fields.get(field, field))

        day = as_date(col("start"), self.fields["start"])
        period_col = col("period")
        period = as_date(period_col, self.fields["period"]) if period_col is not None else day
        period = pc.cast(
            pc.floor_temporal(pc.cast(period, pa.timestamp("s")), unit="month"), pa.date32()
        )
        name = as_string(col("product_name"), n)
        code = as_string(col("product_code"), n)
        service = pc.if_else(pc.equal(name, ""), code, name)
        item_type = as_string(col("item_type"), n)
        unblended = money("unblended")
        effective = self._effective(item_type, unblended, money)
        table: dict[str, Any] = {
            "day": day,
            "billing_period": period,
            "provider": pa.array(["AWS"] * n),
            "billing_account": as_string(col("payer"), n),
            "sub_account": as_string(col("account"), n),
            "service": service,
            "service_category": pa.array([""] * n),
            "usage_type": as_string(col("usage_type"), n),
            "region": as_string(col("region"), n),
            "resource_id": as_string(col("resource_id"), n),
            "instance_type": as_string(col("instance_type"), n),
            "charge_category": _categories(item_type),
            "unit": as_string(col("unit"), n),
            "estimated": pa.array([False] * n),
        }
        for key, column in sorted(self.tags.items()):
            table[TAG_PREFIX + key] = as_string(batch[column], n)
        map_col = col("tags_map")
        if map_col is not None:
            for key in sorted(self.tag_keys - set(self.tags)):
                table[TAG_PREFIX + key] = _from_map(map_col, key, n)
        table["billed"] = unblended
        table["effective"] = effective
        table["quantity"] = money("amount")
        return pa.table(table)

    def _effective(self, item_type: pa.Array, unblended: pa.Array, money: Any) -> pa.Array:
        """Amortised cost, by AWS's documented CASE over the line item type."""
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
            result = pc.if_else(pc.equal(item_type, item), value, result)
        return pc.cast(result, COST_TYPE)


def _categories(item_type: pa.Array) -> pa.Array:
    result = pa.array(["Usage"] * len(item_type))
    for raw, category in _CATEGORY.items():
        result = pc.if_else(pc.equal(item_type, raw), category, result)
    return result


def _from_map(column: Any, key: str, n: int) -> pa.Array:
    """Pick a tag from CUR 2.0's resource_tags map (keys like `user_ml_model`)."""
    values = []
    for entry in column.to_pylist():
        found = ""
        for k, v in entry or []:
            if normalize_tag_key(k.removeprefix("user_").removeprefix("user:")) == key:
                found = v or ""
                break
        values.append(found)
    return pa.array(values, pa.string()) if values else as_string(None, n)
