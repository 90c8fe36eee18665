"""Billing values no ledger can hold are refused by name: file, row, column, value; nothing written.

A NUL byte (PostgreSQL text cannot hold one; refused on SQLite too, so both behave alike), charge
dates outside 2000-01-01..2099-12-31, and a charge period that ends before it starts.
"""

from __future__ import annotations

import csv
import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import create_engine, func, select

from bot.cli import main
from bot.db.schema import DailySpend, IngestionRun
from bot.errors import IngestError
from bot.ingest.sources.base import GroupedCharges, empty_charges
from tests.conftest import DATA

REGISTRY = """
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - {name: recsys, team: ranking, match: {tags: {"ml:model": recsys}}}
"""


def focus_file(tmp_path: Path, row: int, **changes: str) -> Path:
    """Four rows of the FOCUS sample, with `changes` made to data row `row` (1-based)."""
    with (DATA / "focus_sample.csv").open(newline="") as f:
        rows = [r for _, r in zip(range(4), csv.DictReader(f), strict=False)]
    rows[row - 1].update(changes)
    path = tmp_path / "export.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def ingest(
    capsys: pytest.CaptureFixture[str], database_url: str, kind: str, path: Path
) -> tuple[int, str]:
    registry = path.parent / "registry.yaml"
    registry.write_text(REGISTRY)
    assert main(["--database-url", database_url, "registry", "import", str(registry)]) == 0
    capsys.readouterr()
    code = main(["--database-url", database_url, "ingest", kind, str(path)])
    return code, capsys.readouterr().err


def nothing_written(database_url: str) -> bool:
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            spend = conn.execute(select(func.count()).select_from(DailySpend)).scalar()
            runs = conn.execute(select(func.count()).select_from(IngestionRun)).scalar()
    finally:
        engine.dispose()
    return spend == 0 and runs == 0


@pytest.mark.parametrize(
    ("row", "changes", "named"),
    [
        (3, {"ResourceId": "arn:x\x00y"}, ["row 3", "column ResourceId", "NUL", r"'arn:x\x00y'"]),
        (2, {"ServiceName": "\x00"}, ["row 2", "column ServiceName", "NUL"]),
        # a tag value mlcost reads, written raw or as JSON's \u0000 escape
        (1, {"Tags": '{"ml:model": "rec\x00sys"}'}, ["row 1", "column Tags", "NUL"]),
        (4, {"Tags": '{"ml:model": "rec\\u0000sys"}'}, ["row 4", "column Tags", "NUL"]),
    ],
)
def test_a_nul_byte_in_a_billing_string_is_refused_by_row_and_column(
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    row: int,
    changes: dict[str, str],
    named: list[str],
) -> None:
    path = focus_file(tmp_path, row, **changes)
    code, err = ingest(capsys, database_url, "focus", path)
    assert code == 2, err
    assert err.startswith(f"error: {path}: ") and err.count("\n") == 1, err
    for part in named:
        assert part in err, (part, err)
    assert "unexpected" not in err
    assert nothing_written(database_url)


@pytest.mark.parametrize(
    ("row", "changes", "named"),
    [
        (
            2,
            {"ChargePeriodStart": "9999-12-31 22:00:00", "ChargePeriodEnd": "9999-12-31 23:00:00"},
            ["row 2", "column ChargePeriodStart", "9999-12-31", "2000-01-01..2099-12-31"],
        ),
        (3, {"ChargePeriodStart": "1970-01-01 00:00:00"}, ["row 3", "ChargePeriodStart", "1970"]),
        (1, {"BillingPeriodStart": "2124-09-01 00:00:00"}, ["row 1", "BillingPeriodStart"]),
        (
            4,
            {"ChargePeriodEnd": "9999-01-01 00:00:00"},
            ["row 4", "column ChargePeriodEnd", "9999-01-01"],
        ),
        (
            2,
            {"ChargePeriodStart": "2024-09-30 22:00:00", "ChargePeriodEnd": "2024-09-30 21:00:00"},
            ["row 2", "column ChargePeriodEnd", "2024-09-30 21:00:00", "before", "22:00:00"],
        ),
    ],
)
def test_an_impossible_charge_date_is_refused_by_row_and_column(
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    row: int,
    changes: dict[str, str],
    named: list[str],
) -> None:
    path = focus_file(tmp_path, row, **changes)
    code, err = ingest(capsys, database_url, "focus", path)
    assert code == 2, err
    assert err.startswith(f"error: {path}: ") and err.count("\n") == 1, err
    for part in named:
        assert part in err, (part, err)
    assert nothing_written(database_url)


def test_a_charge_period_of_no_length_is_accepted(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    moment = "2024-09-30 22:00:00"
    path = focus_file(tmp_path, 2, ChargePeriodStart=moment, ChargePeriodEnd=moment)
    code, err = ingest(capsys, database_url, "focus", path)
    assert code == 0, err


def cur_file(tmp_path: Path, n: int = 3, **bad: object) -> Path:
    """A small CUR 2.0 Parquet file; `bad` replaces the last row's value of a column."""
    start = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    columns: dict[str, list[object]] = {
        "bill_billing_period_start_date": [start] * n,
        "bill_payer_account_id": ["111122223333"] * n,
        "line_item_usage_account_id": ["111122223333"] * n,
        "line_item_usage_start_date": [start + dt.timedelta(hours=i) for i in range(n)],
        "line_item_usage_end_date": [start + dt.timedelta(hours=i + 1) for i in range(n)],
        "line_item_product_code": ["AmazonSageMaker"] * n,
        "line_item_resource_id": [f"arn:aws:sagemaker:us-east-1:1:endpoint/e{i}" for i in range(n)],
        "line_item_unblended_cost": [Decimal("1.5")] * n,
        "resource_tags": [[("user_ml_model", "recsys")]] * n,
    }
    for name, value in bad.items():
        columns[name][-1] = value
    types = {
        "bill_billing_period_start_date": pa.timestamp("ms", "UTC"),
        "line_item_usage_start_date": pa.timestamp("ms", "UTC"),
        "line_item_usage_end_date": pa.timestamp("ms", "UTC"),
        "line_item_unblended_cost": pa.decimal128(20, 10),
        "resource_tags": pa.map_(pa.string(), pa.string()),
    }
    table = pa.table({k: pa.array(v, types.get(k, pa.string())) for k, v in columns.items()})
    path = tmp_path / "cur-00001.snappy.parquet"
    pq.write_table(table, path)
    return path


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"line_item_resource_id": "i-0\x00"}, ["row 3", "column line_item_resource_id", "NUL"]),
        ({"resource_tags": [("user_ml_model", "rec\x00sys")]}, ["row 3", "resource_tags", "NUL"]),
        (
            {"line_item_usage_start_date": dt.datetime(9999, 1, 1, tzinfo=dt.UTC)},
            ["row 3", "column line_item_usage_start_date", "9999-01-01"],
        ),
        (
            {"line_item_usage_end_date": dt.datetime(2026, 10, 31, tzinfo=dt.UTC)},
            ["row 3", "column line_item_usage_end_date", "before line_item_usage_start_date"],
        ),
    ],
)
def test_cur_rows_are_checked_the_same_way(
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    bad: dict[str, object],
    named: list[str],
) -> None:
    path = cur_file(tmp_path, **bad)
    code, err = ingest(capsys, database_url, "cur", path)
    assert code == 2, err
    assert err.startswith(f"error: {path}: ") and err.count("\n") == 1, err
    for part in named:
        assert part in err, (part, err)


def test_a_good_cur_file_is_ingested(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = ingest(capsys, database_url, "cur", cur_file(tmp_path))
    assert code == 0, err


def charges(**values: object) -> pa.Table:
    """One canonical charge (every source's shape) with these values."""
    row: dict[str, object] = {name: "" for name in empty_charges().column_names}
    row.update(day=dt.date(2026, 11, 1), billing_period=dt.date(2026, 11, 1), provider="AWS")
    row.update(currency="USD", estimated=False, billed=Decimal(1), effective=Decimal(1))
    row.update(quantity=Decimal(1), **values)
    return pa.Table.from_pylist([row], schema=empty_charges().schema)


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"service": "Amazon\x00SageMaker"}, ["service", "NUL"]),
        ({"day": dt.date(9999, 12, 31)}, ["day", "9999-12-31", "2000-01-01..2099-12-31"]),
        ({"billing_period": dt.date(1999, 12, 1)}, ["billing_period", "1999-12-01"]),
    ],
)
def test_every_source_s_charges_are_checked_before_they_are_grouped(
    values: dict[str, object], named: list[str]
) -> None:
    # Cost Explorer, Athena and OpenCost hand their charges to GroupedCharges as they are read
    with pytest.raises(IngestError) as caught:
        GroupedCharges().add(charges(**values))
    for part in named:
        assert part in str(caught.value), (part, caught.value)
