"""FOCUS 0.5-1.3 cost exports (CSV, CSV.gz, Parquet; local or s3://), from AWS, Azure, GCP, OCI."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from bot.errors import IngestError
from bot.ingest.gpu import GPU_HOUR_UNITS, HOUR_UNITS, find_azure_gpu_size, find_instance_type
from bot.ingest.sources.base import (
    COST_TYPE,
    TAGS_JSON,
    Progress,
    SourceData,
    as_date,
    as_decimal,
    as_string,
    check_days,
    check_period_end,
    filter_tags_json,
)
from bot.ingest.sources.files import FileSource, iter_batches
from bot.ingest.sources.formats import format_hint

REQUIRED = ("ChargePeriodStart", "BilledCost", "EffectiveCost", "BillingAccountId", "ServiceName")
# Mandatory since FOCUS 1.0 and read by mlcost: required of a file that declares 1.1 or 1.2
# columns (a 1.0 file without them falls back to Usage, the charge day's month and the default
# currency, as early 1.0 exports did).
REQUIRED_SINCE_1_1 = ("ChargeCategory", "BillingPeriodStart", "BillingCurrency")
# The columns FOCUS 1.2 requires of every dataset with no applicability condition: the
# ColumnPresent rules CostAndUsage-D-*-M of the FOCUS validator's model-1.2.json.
MANDATORY_1_2 = (
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "ContractedCost",
    "EffectiveCost",
    "InvoiceIssuerName",
    "ListCost",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "ServiceCategory",
    "ServiceName",
)
# How to tell FOCUS versions apart, newest first: a file with one of a version's columns (added
# in it, or, for 1.0-preview and 0.5, named as only that version named them) is that version.
# From the specification's CHANGELOG.md (FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec) and, for
# 1.3, its renamed provider columns (ProviderName -> ServiceProviderName, PublisherName ->
# HostProviderName). A file with none of them is read as 1.0.
VERSION_MARKERS = {
    "1.3": ("ServiceProviderName", "HostProviderName"),
    "1.2": (
        "BillingAccountType",
        "SubAccountType",
        "InvoiceId",
        "PricingCurrency",
        "PricingCurrencyContractedUnitPrice",
        "PricingCurrencyEffectiveCost",
        "PricingCurrencyListUnitPrice",
    ),
    "1.1": (
        "CapacityReservationId",
        "CapacityReservationStatus",
        "CommitmentDiscountQuantity",
        "CommitmentDiscountUnit",
        "ServiceSubcategory",
        "SkuMeter",
        "SkuPriceDetails",
    ),
    "1.0": (
        "ChargeClass",
        "CommitmentDiscountStatus",
        "ContractedCost",
        "ContractedUnitPrice",
        "RegionId",
        "RegionName",
        "ConsumedQuantity",
        "ConsumedUnit",
    ),
    "1.0-preview": ("ChargeSubcategory", "UsageQuantity", "UsageUnit"),
    "0.5": ("AmortizedCost", "ChargeType"),
}
# Columns a later version renamed: the old name is read as the new one when the file lacks the
# new one (AmortizedCost and ChargeType until 1.0-preview, Region and UsageQuantity/UsageUnit
# until 1.0).
RENAMED = {
    "AmortizedCost": "EffectiveCost",
    "ChargeType": "ChargeCategory",
    "Provider": "ProviderName",
    "Publisher": "PublisherName",
    "InvoiceIssuer": "InvoiceIssuerName",
    "Region": "RegionId",
    "UsageQuantity": "ConsumedQuantity",
    "UsageUnit": "ConsumedUnit",
}
# The last version that has a renamed column's old name: a header holding one is that version at
# the newest, whatever newer columns an exporter added beside it.
LAST_IN = {
    "AmortizedCost": "0.5",
    "ChargeType": "0.5",
    "Provider": "0.5",
    "Publisher": "0.5",
    "InvoiceIssuer": "0.5",
    "UsageQuantity": "1.0-preview",
    "UsageUnit": "1.0-preview",
}
_BEFORE_1_1 = ("0.5", "1.0-preview", "1.0")
# Oldest first: how an ingestion of several files lists their versions.
_VERSION_ORDER = tuple(reversed(VERSION_MARKERS))
# A required column as an older version names it, for messages.
_OLD_NAMES = {
    "0.5": {
        "EffectiveCost": "AmortizedCost",
        "ChargeCategory": "ChargeType",
        "ProviderName": "Provider",
    }
}
OPTIONAL = (
    "BillingPeriodStart",
    "ChargePeriodEnd",
    "ProviderName",
    "ServiceProviderName",
    "SubAccountId",
    "ServiceCategory",
    "SkuId",
    "SkuMeter",
    "SkuPriceDetails",
    "x_UsageType",
    "RegionId",
    "ResourceId",
    "ChargeCategory",
    "ChargeDescription",
    "ConsumedQuantity",
    "ConsumedUnit",
    "PricingQuantity",
    "PricingUnit",
    "Tags",
    "x_InstanceType",
    "x_SkuDetails",
    "x_SystemLabels",
    "x_Labels",
    "BillingCurrency",
)
_INSTANCE_IN_TEXT = (
    r"(?P<it>(?:ml\.)?(?:p|g|trn|inf|gr)[0-9][a-z0-9-]*\.[0-9]*x?large"
    r"|Standard_N[CDV][A-Za-z0-9_]*)"
)
# Where exports put the machine type: Azure's SkuPriceDetails (1.2, "same as AdditionalInfo") and
# x_SkuDetails carry {"ServiceType": "Standard_NC24ads_A100_v4", ...}; Google Cloud's
# x_SystemLabels carry compute.googleapis.com/machine_spec.
_INSTANCE_KEYS = ("ServiceType", "InstanceType", "x_InstanceType", "machine_spec")
_GCP_MACHINE_SPEC = "compute.googleapis.com/machine_spec"
_AZURE_PROVIDER_RE = "(?i)microsoft|azure"
# Google Cloud bills a GPU VM as separate core, RAM and GPU SKUs; the GPU SKU's usage counts
# per GPU ("Nvidia Tesla A100 GPU running in Americas", in seconds).
_GPU_SKU_RE = re.compile(r"\bGPU\b")
# A machine type without GPUs is kept as written: Azure sizes and Google Cloud machine types.
_MACHINE_TYPE_RE = re.compile(r"Standard_[A-Za-z0-9_]+|[a-z][a-z0-9]*-[a-z]+-[0-9]+[a-z]?")
_SECOND_UNITS = frozenset({"seconds", "second", "s", "sec", "secs"})
_SECONDS_PER_HOUR = Decimal(3600)
_BYTE_SECONDS_PER_GIB_HOUR = Decimal(2**30 * 3600)
_QUANTUM = Decimal("1e-10")


class FocusSource(FileSource):
    """Read FOCUS exports; each (provider, billing account, billing period) replaces its rows.

    FOCUS 0.5, 1.0-preview, 1.0, 1.1, 1.2 and 1.3 are told apart by their columns; columns a
    later version renamed are read under their old names. Each row keeps its BillingCurrency;
    a row without one is counted in `default_currency`.
    """

    kind = "focus"
    currency_field = "BillingCurrency"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._notes: dict[str, None] = {}  # ordered and without repeats
        self._versions: set[str] = set()
        self._version: str | None = None  # the file being read, once its header is accepted

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        """Read every file, naming the FOCUS versions read and noting non-conformant 1.2 files."""
        self._notes.clear()
        self._versions.clear()
        data = super().read(tag_keys, progress)
        data.notes.extend(self._notes)
        versions = [v for v in _VERSION_ORDER if v in self._versions]
        data.detected_format = f"FOCUS {', '.join(versions)}" if versions else ""
        return data

    def read_as(self) -> str:
        """Name the file's FOCUS version, once its header was read, after an error."""
        return f"; read as FOCUS {self._version}" if self._version else ""

    def file_charges(self, path: Path, tag_keys: set[str]) -> Iterator[tuple[int, pa.Table]]:
        """Yield each batch's row count with its canonical charges."""
        self._version = None

        def columns_for(names: list[str]) -> list[str]:
            columns, version, absent = focus_columns(names)
            if absent:
                self._notes[
                    f"a FOCUS {version} file lacks mandatory column(s) {', '.join(absent)} "
                    "(not conformant; mlcost does not read them)"
                ] = None
            self._version = version
            self._versions.add(version)
            return columns

        for batch in iter_batches(path, columns_for):
            yield batch.num_rows, _canonical(batch, tag_keys)


def focus_version(names: list[str]) -> str:
    """Return the FOCUS version a header is read as ("0.5" ... "1.3"); 1.0 when nothing tells."""
    return _detected_version(names) or "1.0"


def _detected_version(names: list[str]) -> str | None:
    """Return the newest FOCUS version whose columns the header has, else None.

    A column a later version renamed caps it: the header is that column's last version.
    """
    present = {_clean(n) for n in names}
    capped = [_VERSION_ORDER.index(LAST_IN[n]) for n in present if n in LAST_IN]
    if capped:
        return _VERSION_ORDER[min(capped)]
    return next(
        (v for v, markers in VERSION_MARKERS.items() if present.intersection(markers)), None
    )


def focus_columns(names: list[str]) -> tuple[list[str], str, list[str]]:
    """Return the columns to read, the FOCUS version, and absent 1.2-mandatory columns not read.

    Raise IngestError naming the version and every missing column mlcost needs, as the file's
    version names them.
    """
    stripped = _canonical_names(names)
    # A native export (Azure's has ChargeType and UsageQuantity) is no FOCUS version at all.
    hint = format_hint(names, "focus")
    detected = None if hint else _detected_version(names)
    version = detected or "1.0"
    needed = REQUIRED if version in _BEFORE_1_1 else (*REQUIRED, *REQUIRED_SINCE_1_1)
    written = _OLD_NAMES.get(version, {})
    missing = [written.get(c, c) for c in needed if c not in stripped]
    if "ProviderName" not in stripped and "ServiceProviderName" not in stripped:
        missing.append(
            written.get(
                "ProviderName", "ServiceProviderName" if version == "1.3" else "ProviderName"
            )
        )
    if missing:
        what = f"FOCUS {detected} column(s)" if detected else "FOCUS column(s)"
        raise IngestError(f"missing {what}: {', '.join(missing)}{hint}")
    absent = (
        [c for c in MANDATORY_1_2 if c not in stripped and c != "ProviderName"]
        if version == "1.2"
        else []
    )
    columns = [stripped[c] for c in (*REQUIRED, *OPTIONAL) if c in stripped]
    return list(dict.fromkeys(columns)), version, absent


def _canonical_names(names: list[str]) -> dict[str, str]:
    """Map each column's current FOCUS name to its name in the file (renamed ones included)."""
    found = {_clean(n): n for n in names}
    for old, new in RENAMED.items():
        if old in found and new not in found:
            found[new] = found.pop(old)
    return found


def _clean(name: str) -> str:
    return name.strip().lstrip("\ufeff")


def _canonical(batch: pa.Table, tag_keys: set[str]) -> pa.Table:
    # One array per column: the masks below (replace_with_mask) take arrays, not chunks.
    names = _canonical_names(batch.column_names)
    cols = {name: batch[written].combine_chunks() for name, written in names.items()}
    n = batch.num_rows

    def get(name: str) -> Any:
        return cols.get(name)

    day = as_date(cols["ChargePeriodStart"], "ChargePeriodStart")
    check_days(day, "ChargePeriodStart")
    if get("ChargePeriodEnd") is not None:
        check_period_end(
            cols["ChargePeriodStart"],
            cols["ChargePeriodEnd"],
            "ChargePeriodStart",
            "ChargePeriodEnd",
        )
    period_raw = get("BillingPeriodStart")
    period = as_date(period_raw, "BillingPeriodStart") if period_raw is not None else day
    if period_raw is not None:
        check_days(period, "BillingPeriodStart")
    period = pc.cast(
        pc.floor_temporal(pc.cast(period, pa.timestamp("s")), unit="month"), pa.date32()
    )
    provider = as_string(get("ProviderName"), n)
    provider = pc.if_else(
        pc.equal(provider, ""), as_string(get("ServiceProviderName"), n), provider
    )
    google = pc.match_substring_regex(provider, "(?i)^google")
    description = as_string(get("ChargeDescription"), n)
    instance = _instance_types(cols, description, provider, n)
    usage_type = _first_present(
        as_string(get("x_UsageType"), n),
        as_string(get("SkuMeter"), n),
        # Google Cloud's export has no SkuMeter: its SKU description names what is metered.
        pc.if_else(google, description, ""),
        as_string(get("SkuId"), n),
    )
    quantity = as_decimal(
        get("ConsumedQuantity"), n, _clean(names.get("ConsumedQuantity", "ConsumedQuantity"))
    )
    unit = as_string(get("ConsumedUnit"), n)
    quantity, unit = _google_usage(
        google,
        description,
        quantity,
        unit,
        as_decimal(get("PricingQuantity"), n, "PricingQuantity"),
        as_string(get("PricingUnit"), n),
    )
    tags = _first_present(
        _mapping_text(get("Tags"), n, "Tags"), _mapping_text(get("x_Labels"), n, "x_Labels")
    )
    return pa.table(
        {
            "day": day,
            "billing_period": period,
            "provider": provider,
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
            "unit": unit,
            "estimated": pa.array([False] * n),
            TAGS_JSON: filter_tags_json(tags, tag_keys),
            "billed": as_decimal(cols["BilledCost"], n, "BilledCost"),
            "effective": as_decimal(cols["EffectiveCost"], n, _clean(names["EffectiveCost"])),
            "quantity": quantity,
        }
    )


def _first_present(*columns: pa.Array) -> pa.Array:
    """Return, row by row, the first non-empty value of the columns."""
    result = columns[0]
    for column in columns[1:]:
        result = pc.if_else(pc.equal(result, ""), column, result)
    return result


def _instance_types(
    cols: dict[str, Any], description: pa.Array, provider: pa.Array, n: int
) -> pa.Array:
    """Find each row's instance (machine) type where the provider's export carries it."""
    found = as_string(cols.get("x_InstanceType"), n)
    for name in ("SkuPriceDetails", "x_SkuDetails", "x_SystemLabels"):
        if name in cols:
            found = _first_present(found, _instance_in_mapping(cols[name], n, name))
    in_text = pc.struct_field(pc.extract_regex(description, _INSTANCE_IN_TEXT), [0])
    found = _first_present(found, pc.fill_null(in_text, ""))
    # Azure rows without SkuPriceDetails / x_SkuDetails still name a GPU VM's size in the
    # standard columns: the meter (SkuMeter), then the product (ChargeDescription).
    azure = pc.match_substring_regex(provider, _AZURE_PROVIDER_RE)
    if not pc.any(pc.and_(azure, pc.equal(found, ""))).as_py():
        return found
    for column in (as_string(cols.get("SkuMeter"), n), description):
        size = _per_value(column, lambda text: find_azure_gpu_size(text) or "")
        found = _first_present(found, pc.if_else(azure, size, ""))
    return found


def _instance_in_mapping(column: Any, n: int, what: str) -> pa.Array:
    def machine(raw: str) -> str:
        mapping = _loads_object(raw)
        value = next(
            (str(v) for k, v in mapping.items() if k in _INSTANCE_KEYS or k == _GCP_MACHINE_SPEC),
            "",
        )
        return find_instance_type(value) or (value if _MACHINE_TYPE_RE.fullmatch(value) else "")

    return _per_value(_mapping_text(column, n, what), machine)


def _per_value(column: pa.Array, convert: Any) -> pa.Array:
    """Apply a text conversion once per distinct value of a string column (nulls read as "")."""
    encoded = pc.dictionary_encode(column)
    converted = pa.array([convert(v) for v in encoded.dictionary.to_pylist()], pa.string())
    return pc.fill_null(pc.take(converted, encoded.indices), "")


def _loads_object(raw: str) -> dict[str, Any]:
    """Parse a JSON object; anything else (blank, malformed, a list) reads as no keys."""
    try:
        value = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _mapping_text(column: Any, n: int, what: str) -> pa.Array:
    """Return a key-value column (JSON text, a Parquet struct/map, or GCP's [{key, value}]) as
    JSON objects in text; empty where there is none."""
    if column is None:
        return as_string(None, n)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        text = as_string(column, n)
        if not pc.any(pc.starts_with(pc.utf8_ltrim_whitespace(text), "[")).as_py():
            return text  # JSON objects already (the common case): no per-row work here
        return _per_value(text, lambda raw: _as_object_text(raw, what))
    cache: dict[str, str] = {}  # Parquet lists, structs and maps, by their JSON
    out = []
    for raw in column.to_pylist():
        key = json.dumps(raw, default=str)
        if key not in cache:
            cache[key] = _as_object_text(raw, what)
        out.append(cache[key])
    return pa.array(out, pa.string())


def _as_object_text(raw: Any, what: str) -> str:
    value = raw
    if isinstance(raw, str):
        text = raw.strip()
        if not text.startswith("["):
            return text if text not in ("NULL", "null") else ""
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise IngestError(f"column {what} is not JSON: {text[:80]!r}") from None
    if not value:
        return ""
    if isinstance(value, list):
        pairs = {}
        for item in value:
            if isinstance(item, dict):
                key = item.get("key", item.get("Key"))
                if key is not None:
                    pairs[str(key)] = item.get("value", item.get("Value"))
            elif isinstance(item, (list, tuple)) and len(item) == 2:  # a Parquet map
                pairs[str(item[0])] = item[1]
        value = pairs
    return json.dumps(value, sort_keys=True, default=str) if value else ""


def _google_usage(
    google: pa.Array,
    description: pa.Array,
    quantity: pa.Array,
    unit: pa.Array,
    pricing_quantity: pa.Array,
    pricing_unit: pa.Array,
) -> tuple[pa.Array, pa.Array]:
    """Count Google Cloud GPU SKU usage in GPU-hours (the ledger counts it one to one) and RAM
    byte-seconds in GiB-hours (a month of a large VM's byte-seconds passes 10^18)."""
    unit, pricing_unit = pc.cast(unit, pa.string()), pc.cast(pricing_unit, pa.string())
    gpu_rows = pc.and_(
        google, pc.match_substring_regex(description, _GPU_SKU_RE.pattern, ignore_case=True)
    )
    byte_rows = pc.and_(google, pc.equal(pc.utf8_lower(unit), "byte-seconds"))
    if not pc.any(pc.or_(gpu_rows, byte_rows)).as_py():
        return quantity, unit
    if pc.any(byte_rows).as_py():
        gib_hours = [
            (q / _BYTE_SECONDS_PER_GIB_HOUR).quantize(_QUANTUM)
            for q in quantity.filter(byte_rows).to_pylist()
        ]
        quantity = pc.replace_with_mask(quantity, byte_rows, pa.array(gib_hours, COST_TYPE))
        unit = pc.replace_with_mask(unit, byte_rows, pa.array(["GiB-hours"] * len(gib_hours)))
    if not pc.any(gpu_rows).as_py():
        return quantity, unit
    picked = zip(
        quantity.filter(gpu_rows).to_pylist(),
        unit.filter(gpu_rows).to_pylist(),
        pricing_quantity.filter(gpu_rows).to_pylist(),
        pricing_unit.filter(gpu_rows).to_pylist(),
        strict=True,
    )
    amounts, units = [], []
    for amount, name, priced, priced_unit in picked:
        hours = _gpu_hours_of(amount, name.strip().lower(), priced, priced_unit.strip().lower())
        amounts.append(amount if hours is None else hours)
        units.append(name if hours is None else "GPU-hours")
    return (
        pc.replace_with_mask(quantity, gpu_rows, pa.array(amounts, COST_TYPE)),
        pc.replace_with_mask(unit, gpu_rows, pa.array(units, pa.string())),
    )


def _gpu_hours_of(amount: Decimal, unit: str, priced: Decimal, priced_unit: str) -> Decimal | None:
    """Return a GPU SKU's usage in hours, or None when its units say nothing about time."""
    if unit in _SECOND_UNITS:
        return (amount / _SECONDS_PER_HOUR).quantize(_QUANTUM)
    if unit in HOUR_UNITS or unit in GPU_HOUR_UNITS:
        return amount
    return priced if priced_unit in HOUR_UNITS else None
