"""Tell billing export formats apart by their header, to say which command reads a file.

One table of the formats people hand to mlcost: those it reads (FOCUS, CUR) and the providers'
native exports it does not, each with the way to get FOCUS from that provider. Column names are
compared case-insensitively, and a localised label with the column name in brackets
("Kategorie der Verbrauchseinheit (MeterCategory)", as Azure's portal writes in German) is read
as that name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ExportFormat:
    """A billing export format: what it is called and what to do with it."""

    kind: str
    name: str
    # A header is this format when it has every column of one signature (lower case).
    signatures: tuple[frozenset[str], ...]
    # Follows the name in a message: ": use 'mlcost ingest cur'" or ", which mlcost ...".
    way_forward: str


def _sig(*columns: str) -> frozenset[str]:
    return frozenset(c.lower() for c in columns)


_GCP_FOCUS = (
    ", which mlcost does not read: enable FOCUS in Cloud Billing export to BigQuery, "
    "'FOCUS usage cost' (table gcp_billing_export_focus_<BILLING_ACCOUNT_ID>), extract that "
    "table to Parquet or CSV and use 'mlcost ingest focus'"
)
_AZURE_FOCUS = (
    ", which mlcost does not read: export FOCUS from Cost Management (Exports, "
    "dataset 'Cost and usage details (FOCUS)') and use 'mlcost ingest focus'"
)
_OCI_FOCUS = (
    ", which mlcost does not read: OCI also writes FOCUS cost reports to the same bucket, "
    "under 'FOCUS Reports/' (Billing & Cost Management, Cost and Usage Reports, FOCUS "
    "Reports); download those and use 'mlcost ingest focus'"
)

# Checked in order: the first format whose signature the header has wins (FOCUS and CUR
# first; a more specific native export before its plainer sibling).
FORMATS: tuple[ExportFormat, ...] = (
    ExportFormat(
        "focus",
        "a FOCUS export",
        (
            _sig("ChargePeriodStart", "BilledCost", "EffectiveCost"),
            _sig("ChargePeriodStart", "BilledCost", "AmortizedCost"),  # FOCUS 0.5
        ),
        ": use 'mlcost ingest focus'",
    ),
    ExportFormat(
        "cur",
        "an AWS Cost and Usage Report",
        (
            _sig("line_item_usage_start_date", "line_item_unblended_cost"),
            _sig("lineItem/UsageStartDate", "lineItem/UnblendedCost"),
        ),
        ": use 'mlcost ingest cur'",
    ),
    ExportFormat(
        "azure",
        "an Azure cost export (EA or MCA)",
        (
            _sig("SubscriptionId", "MeterCategory", "Cost"),
            _sig("SubscriptionId", "MeterCategory", "CostInBillingCurrency"),
            _sig("SubscriptionGuid", "MeterCategory", "CostInBillingCurrency"),
        ),
        _AZURE_FOCUS,
    ),
    ExportFormat(
        "azure-legacy",
        "Azure's older usage details export (PreTaxCost, UsageDateTime)",
        (
            _sig("UsageDateTime", "MeterCategory", "PreTaxCost"),
            _sig("SubscriptionGuid", "UsageDateTime", "PreTaxCost"),
        ),
        _AZURE_FOCUS,
    ),
    ExportFormat(
        "gcp-detailed",
        "Google Cloud's detailed usage cost export (BigQuery)",
        tuple(
            _sig("billing_account_id", "usage_start_time", "cost", resource)
            for resource in ("resource", "resource.name", "resource_name")
        ),
        _GCP_FOCUS,
    ),
    ExportFormat(
        "gcp-standard",
        "Google Cloud's standard usage cost export (BigQuery)",
        (_sig("billing_account_id", "usage_start_time", "cost"),),
        _GCP_FOCUS,
    ),
    ExportFormat(
        "oci-cost",
        "an OCI cost report",
        (_sig("lineItem/intervalUsageStart", "product/service", "cost/myCost"),),
        _OCI_FOCUS,
    ),
    ExportFormat(
        "oci-usage",
        "an OCI usage report",
        (_sig("lineItem/intervalUsageStart", "product/service", "usage/consumedQuantity"),),
        ", which has no costs and mlcost does not read: "
        + _OCI_FOCUS.removeprefix(", which mlcost does not read: "),
    ),
    ExportFormat(
        "opencost-csv",
        "OpenCost's CSV export (EXPORT_CSV_FILE)",
        (_sig("Date", "Namespace", "ControllerKind", "Pod", "Container", "TotalCost"),),
        ", which has neither the cluster nor its idle cost and mlcost does not read: use "
        "the OpenCost API (mlcost ingest opencost http://HOST:9003) or a saved /allocation "
        "answer (JSON)",
    ),
)
_BRACKETED = re.compile(r".*\(([A-Za-z0-9_/.]+)\)")


def _column_key(name: str) -> str:
    name = name.strip().lstrip("\ufeff").strip()
    bracketed = _BRACKETED.fullmatch(name)
    return (bracketed[1] if bracketed else name).lower()


def export_format(names: Iterable[str]) -> ExportFormat | None:
    """Return the known format whose columns the header has, else None."""
    present = {_column_key(name) for name in names}
    for known in FORMATS:
        if any(signature <= present for signature in known.signatures):
            return known
    return None


def export_kind(names: Iterable[str]) -> str | None:
    """Return the kind ("focus", "cur", "azure", "gcp-standard", ...) of a header, else None."""
    found = export_format(names)
    return found.kind if found else None


def format_hint(names: Iterable[str], expected: str) -> str:
    """Return "; this looks like <format>: <what to do>" for another format's header, else ""."""
    found = export_format(names)
    if found is None or found.kind == expected:
        return ""
    return f"; this looks like {found.name}{found.way_forward}"
