"""Every FOCUS version, 0.5 to 1.3, is told by its columns, named in messages and read.

The 0.5, 1.0-preview and 1.3 fixtures (tests/data/synthetic-focus-*.csv) are synthetic, built
from the specification's column lists (see tests/data/README.md). Expected totals are summed
here from the files with csv + Decimal, never copied from the code's output.
"""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.cli.ingest_cmd import print_report
from bot.db.schema import DailySpend
from bot.errors import IngestError
from bot.ingest.ledger import ingest
from bot.ingest.sources.focus import FocusSource, focus_columns, focus_version
from bot.ingest.sources.formats import export_kind
from tests.conftest import DATA
from tests.support.ledger import ledger_totals
from tests.support.sample_registry import load_registry


def header(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8-sig") as f:
        return next(csv.reader(f))


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def total(path: Path, column: str) -> Decimal:
    return sum((Decimal(r[column]) for r in rows(path) if r[column]), Decimal(0))


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("synthetic-focus-0.5.csv", "0.5"),
        ("synthetic-focus-1.0-preview.csv", "1.0-preview"),
        ("focus_sample.csv", "1.0"),
        ("focus12_gcp_azure_sample.csv", "1.2"),
        ("synthetic-focus-1.3.csv", "1.3"),
    ],
)
def test_the_focus_version_is_read_from_the_columns(name: str, version: str) -> None:
    assert focus_version(header(DATA / name)) == version
    assert export_kind(header(DATA / name)) == "focus"


def test_a_0_5_column_caps_the_version_whatever_newer_columns_sit_beside_it() -> None:
    """focus_validator's 0.5 sample has BillingAccountType (added in 1.2) next to 0.5's Provider,
    Publisher, InvoiceIssuer and AmortizedCost: it is a 0.5 file, its Provider its ProviderName."""
    names = header(DATA / "corpus" / "focus-0.5_validator_all_pass.csv")
    assert {"BillingAccountType", "Provider", "AmortizedCost"} <= set(names)
    assert focus_version(names) == "0.5"
    columns, version, _ = focus_columns(names)
    assert version == "0.5" and {"Provider", "AmortizedCost", "ChargeType"} <= set(columns)


def test_a_focus_0_5_file_is_read_with_its_0_5_column_names(session: Session) -> None:
    """0.5 had AmortizedCost (EffectiveCost since 1.0-preview), ChargeType (ChargeCategory)
    and Region (RegionId since 1.0): mapped, not refused."""
    load_registry(session)
    path = DATA / "synthetic-focus-0.5.csv"
    report = ingest(FocusSource([str(path)]), session=session)
    assert report.format == "FOCUS 0.5"
    assert report.reconciled and report.rows_read == len(rows(path))
    assert report.billed_total == total(path, "BilledCost")
    effective = session.scalar(select(func.sum(DailySpend.effective_cost)))
    assert effective == total(path, "AmortizedCost")
    by_category = dict(
        session.execute(
            select(DailySpend.charge_category, func.sum(DailySpend.billed_cost)).group_by(
                DailySpend.charge_category
            )
        ).all()
    )
    want: dict[str, Decimal] = {}
    for r in rows(path):
        want[r["ChargeType"]] = want.get(r["ChargeType"], Decimal(0)) + Decimal(r["BilledCost"])
    assert by_category == want
    regions = set(session.scalars(select(DailySpend.region)))
    assert "us-east-1" in regions
    before = ledger_totals(session)
    again = ingest(FocusSource([str(path)]), session=session)
    assert again.reconciled and ledger_totals(session) == before  # re-ingesting changes nothing


def test_a_focus_1_0_preview_file_keeps_its_usage_quantity(session: Session) -> None:
    """1.0-preview's UsageQuantity is 1.0's ConsumedQuantity: GPU-hours come from it."""
    load_registry(session)
    path = DATA / "synthetic-focus-1.0-preview.csv"
    report = ingest(FocusSource([str(path)]), session=session)
    assert report.format == "FOCUS 1.0-preview"
    assert report.reconciled and report.billed_total == total(path, "BilledCost")
    gpu_hours = session.scalar(select(func.sum(DailySpend.gpu_hours)))
    assert gpu_hours == Decimal(3 * 8)  # 3 hours of p4d.24xlarge, 8 GPUs each


def test_a_focus_1_3_file_reads_its_service_provider(session: Session) -> None:
    load_registry(session)
    path = DATA / "synthetic-focus-1.3.csv"
    report = ingest(FocusSource([str(path)]), session=session)
    assert report.format == "FOCUS 1.3"
    assert report.reconciled and report.billed_total == total(path, "BilledCost")
    assert set(session.scalars(select(DailySpend.provider))) == {"Microsoft"}


def test_the_ingest_summary_line_names_the_focus_version(
    session: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    load_registry(session)
    report = ingest(FocusSource([str(DATA / "focus12_gcp_azure_sample.csv")]), session=session)
    print_report(report)
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("focus ") and "(FOCUS 1.2)" in first


def test_several_versions_in_one_ingestion_are_all_named(session: Session) -> None:
    load_registry(session)
    paths = [DATA / "focus_sample.csv", DATA / "synthetic-focus-1.3.csv"]
    report = ingest(FocusSource([str(p) for p in paths]), session=session)
    assert report.format == "FOCUS 1.0, 1.3"


@pytest.mark.parametrize(
    ("name", "drop", "expected"),
    [
        ("synthetic-focus-0.5.csv", "AmortizedCost", "missing FOCUS 0.5 column(s): AmortizedCost"),
        ("focus_sample.csv", "BilledCost", "missing FOCUS 1.0 column(s): BilledCost"),
        (
            "synthetic-focus-1.3.csv",
            "BillingCurrency",
            "missing FOCUS 1.3 column(s): BillingCurrency",
        ),
    ],
)
def test_a_missing_column_is_named_with_the_files_version(
    tmp_path: Path, name: str, drop: str, expected: str
) -> None:
    source_rows = rows(DATA / name)
    path = tmp_path / "export.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, [c for c in source_rows[0] if c != drop])
        writer.writeheader()
        writer.writerows({k: v for k, v in r.items() if k != drop} for r in source_rows)
    with pytest.raises(IngestError) as refused:
        FocusSource([str(path)]).read(set())
    assert str(refused.value) == f"{path}: {expected}"


def test_a_bad_value_names_the_files_focus_version(tmp_path: Path) -> None:
    source_rows = rows(DATA / "synthetic-focus-1.3.csv")
    source_rows[1]["ChargePeriodStart"] = "not a date"
    path = tmp_path / "export.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, list(source_rows[0]))
        writer.writeheader()
        writer.writerows(source_rows)
    with pytest.raises(IngestError) as refused:
        FocusSource([str(path)]).read(set())
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and message.endswith("; read as FOCUS 1.3")


def test_a_0_5_file_without_its_provider_column_is_told_so_by_its_0_5_name(
    tmp_path: Path,
) -> None:
    source_rows = rows(DATA / "synthetic-focus-0.5.csv")
    path = tmp_path / "export.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, [c for c in source_rows[0] if c != "ProviderName"])
        writer.writeheader()
        writer.writerows({k: v for k, v in r.items() if k != "ProviderName"} for r in source_rows)
    with pytest.raises(IngestError) as refused:
        FocusSource([str(path)]).read(set())
    assert str(refused.value) == f"{path}: missing FOCUS 0.5 column(s): Provider"
