"""FOCUS 1.0-1.2 cost exports (CSV, CSV.gz, Parquet; local or s3://)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from bot.errors import IngestError
from bot.ingest.sources.base import (
    TAGS_JSON,
    as_date,
    as_decimal,
    as_string,
    filter_tags_json,
)
from bot.ingest.sources.files import FileSource, iter_batches
from bot.ingest.sources.formats import format_hint

REQUIRED = ("ChargePeriodStart", "BilledCost", "EffectiveCost", "BillingAccountId", "ServiceName")
OPTIONAL = (
    "BillingPeriodStart",
    "ProviderName",
    "ServiceProviderName",
    "SubAccountId",
    "ServiceCategory",
    "SkuId",
    "x_UsageType",
    "RegionId",
    "ResourceId",
    "ChargeCategory",
    "ChargeDescription",
    "ConsumedQuantity",
    "ConsumedUnit",
    "Tags",
    "x_InstanceType",
    "BillingCurrency",
)
_INSTANCE_IN_TEXT = (
    r"(?P<it>(?:ml\.)?(?:p|g|trn|inf|gr)[0-9][a-z0-9-]*\.[0-9]*x?large"
    r"|Standard_N[CDV][A-Za-z0-9_]*)"
)


class FocusSource(FileSource):
    """Read FOCUS exports; each (provider, billing account, billing period) replaces its rows.

    Each row keeps its BillingCurrency; a row without one is counted in `default_currency`.
    """

    kind = "focus"
    currency_field = "BillingCurrency"

    def file_charges(self, path: Path, tag_keys: set[str]) -> Iterator[tuple[int, pa.Table]]:
        """Yield each batch's row count with its canonical charges."""
        for batch in iter_batches(path, _columns_for):
            yield batch.num_rows, _canonical(batch, tag_keys)


def _columns_for(names: list[str]) -> list[str]:
    stripped = {n.strip().lstrip("\ufeff"): n for n in names}
    missing = [c for c in REQUIRED if c not in stripped]
    if "ProviderName" not in stripped and "ServiceProviderName" not in stripped:
        missing.append("ProviderName")
    if missing:
        hint = format_hint(names, "focus")
        raise IngestError(f"missing FOCUS column(s): {', '.join(missing)}{hint}")
    return [stripped[c] for c in (*REQUIRED, *OPTIONAL) if c in stripped]


def _canonical(batch: pa.Table, tag_keys: set[str]) -> pa.Table:
    cols = {name.strip().lstrip("\ufeff"): batch[name] for name in batch.column_names}
    n = batch.num_rows

    def get(name: str) -> Any:
        return cols.get(name)

    day = as_date(cols["ChargePeriodStart"], "ChargePeriodStart")
    period_raw = get("BillingPeriodStart")
    period = as_date(period_raw, "BillingPeriodStart") if period_raw is not None else day
    period = pc.cast(
        pc.floor_temporal(pc.cast(period, pa.timestamp("s")), unit="month"), pa.date32()
    )
    provider = get("ProviderName")
    if provider is None or provider.null_count == n:
        provider = get("ServiceProviderName")
    description = as_string(get("ChargeDescription"), n)
    instance = as_string(get("x_InstanceType"), n)
    found = pc.struct_field(pc.extract_regex(description, _INSTANCE_IN_TEXT), [0])
    instance = pc.if_else(pc.equal(instance, ""), pc.fill_null(found, ""), instance)
    usage_type = as_string(get("x_UsageType"), n)
    usage_type = pc.if_else(pc.equal(usage_type, ""), as_string(get("SkuId"), n), usage_type)
    tags = get("Tags")
    tags_json = (
        filter_tags_json(
            pc.cast(tags, pa.string()).combine_chunks()
            if isinstance(tags, pa.ChunkedArray)
            else tags,
            tag_keys,
        )
        if tags is not None
        else as_string(None, n)
    )
    return pa.table(
        {
            "day": day,
            "billing_period": period,
            "provider": as_string(provider, n),
            "billing_account": as_string(cols["BillingAccountId"], n),
            "sub_account": as_string(get("SubAccountId"), n),
            "service": as_string(cols["ServiceName"], n),
            "service_category": as_string(get("ServiceCategory"), n),
            "usage_type": usage_type,
            "region": as_string(get("RegionId"), n),
            "resource_id": as_string(get("ResourceId"), n),
            "instance_type": instance,
            "charge_category": pc.if_else(
                pc.equal(as_string(get("ChargeCategory"), n), ""),
                "Usage",
                as_string(get("ChargeCategory"), n),
            ),
            "currency": as_string(get("BillingCurrency"), n),
            "unit": as_string(get("ConsumedUnit"), n),
            "estimated": pa.array([False] * n),
            TAGS_JSON: tags_json,
            "billed": as_decimal(cols["BilledCost"], n, "BilledCost"),
            "effective": as_decimal(cols["EffectiveCost"], n, "EffectiveCost"),
            "quantity": as_decimal(get("ConsumedQuantity"), n, "ConsumedQuantity"),
        }
    )
