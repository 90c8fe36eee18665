"""Tell billing export formats apart by their header, to say which command reads a file."""

from __future__ import annotations

from collections.abc import Iterable

# A few columns each format always has (CUR: legacy Parquet and CSV styles; Azure: EA and MCA).
_SIGNATURES: dict[str, tuple[frozenset[str], ...]] = {
    "focus": (frozenset({"ChargePeriodStart", "BilledCost", "EffectiveCost"}),),
    "cur": (
        frozenset({"line_item_usage_start_date", "line_item_unblended_cost"}),
        frozenset({"lineItem/UsageStartDate", "lineItem/UnblendedCost"}),
    ),
    "azure": (
        frozenset({"SubscriptionId", "MeterCategory", "Cost"}),
        frozenset({"SubscriptionId", "MeterCategory", "CostInBillingCurrency"}),
        frozenset({"SubscriptionGuid", "MeterCategory", "CostInBillingCurrency"}),
    ),
}

_HINTS = {
    "focus": "this looks like a FOCUS export: use 'mlcost ingest focus'",
    "cur": "this looks like an AWS Cost and Usage Report: use 'mlcost ingest cur'",
    "azure": (
        "this looks like an Azure cost export (EA or MCA), which mlcost does not read: "
        "export FOCUS from Cost Management (Exports, dataset 'Cost and usage details (FOCUS)') "
        "and use 'mlcost ingest focus'"
    ),
}


def export_kind(names: Iterable[str]) -> str | None:
    """Return "focus", "cur" or "azure" when a header has that format's columns, else None."""
    present = {name.strip().lstrip("\ufeff") for name in names}
    for kind, signatures in _SIGNATURES.items():
        if any(signature <= present for signature in signatures):
            return kind
    return None


def format_hint(names: Iterable[str], expected: str) -> str:
    """Return "; <which command reads it>" when the header is another format's, else ""."""
    kind = export_kind(names)
    return f"; {_HINTS[kind]}" if kind is not None and kind != expected else ""
