"""Native provider exports are refused with the way forward; every FOCUS version is named and read.

The fixtures (tests/data/synthetic-*.csv) are synthetic, built from each format's documented
columns (see tests/data/README.md). Each is refused with its name and the way forward, and
changes nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy.orm import Session

from bot.errors import IngestError
from bot.ingest.ledger import ingest
from bot.ingest.sources.cur import CurSource
from bot.ingest.sources.focus import FocusSource
from bot.ingest.sources.opencost import OpenCostSource
from tests.conftest import DATA
from tests.support.ledger import ledger_totals

GCP_FOCUS = "Cloud Billing export to BigQuery, 'FOCUS usage cost'"
GCP_STANDARD = "Google Cloud's standard usage cost export (BigQuery)"
GCP_DETAILED = "Google Cloud's detailed usage cost export (BigQuery)"
OCI_FOCUS = "FOCUS Reports"
AZURE_FOCUS = "dataset 'Cost and usage details (FOCUS)'"
OPENCOST_API = "the OpenCost API (mlcost ingest opencost http://HOST:9003)"

NATIVE = [
    ("synthetic-gcp-standard-export.csv", GCP_STANDARD, GCP_FOCUS),
    ("synthetic-gcp-detailed-export.csv", GCP_DETAILED, GCP_FOCUS),
    ("synthetic-oci-cost-report.csv", "an OCI cost report", OCI_FOCUS),
    ("synthetic-oci-usage-report.csv", "an OCI usage report", OCI_FOCUS),
    ("synthetic-azure-legacy-usage.csv", "Azure's older usage details export", AZURE_FOCUS),
    ("synthetic-opencost-export.csv", "OpenCost's CSV export", OPENCOST_API),
]


@pytest.mark.parametrize("source", [FocusSource, CurSource])
@pytest.mark.parametrize(("name", "what", "way"), NATIVE)
def test_a_native_export_is_named_and_refused_with_the_way_forward(
    session: Session,
    source: type[FocusSource] | type[CurSource],
    name: str,
    what: str,
    way: str,
) -> None:
    before = ledger_totals(session)
    with pytest.raises(IngestError) as refused:
        ingest(source([str(DATA / name)]), session=session)
    message = str(refused.value)
    assert message.startswith(f"{DATA / name}: missing ")
    assert f"this looks like {what}" in message and way in message
    assert "`" not in message  # terminal output carries no Slack markup
    assert ledger_totals(session) == before


def test_the_gcp_export_as_parquet_keeps_its_records_and_is_still_recognised(
    tmp_path: Path,
) -> None:
    """Extracted to Parquet, BigQuery keeps service, sku, project as records (one column each)."""
    record = pa.struct([("id", pa.string()), ("description", pa.string())])
    table = pa.table(
        {
            "billing_account_id": ["010101-F0FFF0-61C528"],
            "service": pa.array([{"id": "6F81", "description": "Compute Engine"}], record),
            "sku": pa.array([{"id": "2E27", "description": "A100 GPU"}], record),
            "usage_start_time": ["2026-11-01 00:00:00 UTC"],
            "cost": [2.934],
            "currency": ["USD"],
        }
    )
    path = tmp_path / "gcp_billing_export_v1.parquet"
    pq.write_table(table, path)
    with pytest.raises(IngestError, match=re.escape(GCP_STANDARD) + ".*" + re.escape(GCP_FOCUS)):
        FocusSource([str(path)]).read(set())


@pytest.mark.parametrize(
    "columns",
    [
        # MCA in camelCase, as some exports write it (opencost's EnterpriseCamel header set)
        "billingAccountName,date,meterCategory,SubscriptionId,costInBillingCurrency,billingCurrency",
        # the German portal's labels with the column name in brackets
        "Abonnement-GUID (SubscriptionGuid),UsageDateTime (UsageDateTime),"
        "Kategorie der Verbrauchseinheit (MeterCategory),PreTaxCost (PreTaxCost),Currency",
    ],
)
def test_azure_headers_in_another_case_or_language_are_recognised(
    tmp_path: Path, columns: str
) -> None:
    path = tmp_path / "azure.csv"
    path.write_text(columns + "\n" + ",".join("1" for _ in columns.split(",")) + "\n")
    with pytest.raises(IngestError, match=re.escape(AZURE_FOCUS)):
        FocusSource([str(path)]).read(set())


def test_the_opencost_csv_export_given_to_ingest_opencost_says_what_to_do() -> None:
    path = DATA / "synthetic-opencost-export.csv"
    with pytest.raises(IngestError) as refused:
        OpenCostSource(str(path)).read(set())
    message = str(refused.value)
    assert message.startswith(f"{path}: not JSON")
    assert "this looks like OpenCost's CSV export" in message and OPENCOST_API in message


def test_a_focus_file_given_to_ingest_opencost_names_the_command_that_reads_it() -> None:
    path = DATA / "focus_sample.csv"
    with pytest.raises(IngestError, match="use 'mlcost ingest focus'"):
        OpenCostSource(str(path)).read(set())


@pytest.mark.parametrize(
    "path",
    [
        DATA / "synthetic-azure-legacy-usage.csv",  # UsageQuantity: a FOCUS 1.0-preview name
        DATA / "EA_ActualCost_Small.csv",  # ChargeType: a FOCUS 0.5 name
        DATA / "sample-anonymous-ea-export-dataset.csv",
    ],
)
def test_a_native_export_is_not_named_a_focus_version(path: Path) -> None:
    """A native export sharing a column name with an old FOCUS version is not that version."""
    with pytest.raises(IngestError) as refused:
        FocusSource([str(path)]).read(set())
    message = str(refused.value)
    assert message.startswith(f"{path}: missing FOCUS column(s): ChargePeriodStart, BilledCost, ")
    assert "EffectiveCost" in message and "AmortizedCost" not in message
    assert "this looks like" in message and AZURE_FOCUS in message
    assert not re.search(r"FOCUS (0\.5|1\.\d)", message), message
