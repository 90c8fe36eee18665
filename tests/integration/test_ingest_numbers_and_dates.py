"""Numbers and dates as other tools write them: read exactly, or refused by file, row, column
and value.

Python, pandas and Spark write a float cost as its shortest text (`2.5893953072562468e-05`) and a
wide decimal with 19 or more places (`0.1209620000000000001`); each cell is read exactly from its
text and rounded once to the ledger's 10 places, so the ledger still reconciles to the cent with
an independent csv + Decimal sum of the file. Dates take the forms FOCUS allows (ISO 8601 in UTC)
and the ones exporters write around it.
"""

from __future__ import annotations

import csv
import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import requests
from moto import mock_aws
from sqlalchemy import create_engine, func, select

from bot.cli import main
from bot.db.schema import DailySpend
from bot.errors import IngestError
from bot.ingest.sources.athena import AthenaSource
from tests.conftest import DATA
from tests.integration.test_ingest_bad_values import REGISTRY, cur_file, nothing_written

CENT = Decimal("0.01")
FOCUS_COSTS = ("BilledCost", "EffectiveCost")
CUR_COST, CUR_AMOUNT = "lineItem/UnblendedCost", "lineItem/UsageAmount"


def ingest(capsys: pytest.CaptureFixture[str], url: str, kind: str, path: Path) -> tuple[int, str]:
    """Import the registry, then run `mlcost ingest KIND PATH`; return the exit code and output."""
    registry = path.parent / "registry.yaml"
    registry.write_text(REGISTRY)
    assert main(["--database-url", url, "registry", "import", str(registry)]) == 0
    capsys.readouterr()
    code = main(["--database-url", url, "ingest", kind, str(path)])
    out = capsys.readouterr()
    return code, out.out + out.err


def read_rows(name: str, limit: int | None = None) -> list[dict[str, str]]:
    with (DATA / name).open(newline="") as f:
        rows = list(csv.DictReader(f))
    return rows[:limit] if limit else rows


def write_rows(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def as_other_tools_write(text: str, at: int) -> str:
    """Write a cost as pandas/Python (float repr), Spark (19+ places) or with an E exponent."""
    if text in ("", "NULL"):
        return text
    value = Decimal(text)
    if at % 3 == 0:
        return repr(float(value))  # 1.60599e-05, 8e-07, 0.0
    if at % 3 == 1:
        return f"{value:.18f}1"  # 19 places, the last one beyond the ledger's
    return f"{value:E}"  # 1.6059900000E-5


def text_total(rows: list[dict[str, str]], column: str) -> Decimal:
    """The independent sum: csv + Decimal over the file's text, to the cent."""
    total = sum(
        (Decimal(r[column]) for r in rows if r[column] not in ("", "NULL")), start=Decimal(0)
    )
    return total.quantize(CENT)


def ledger_total(url: str, column: str) -> Decimal:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            total = conn.execute(select(func.sum(getattr(DailySpend, column)))).scalar()
    finally:
        engine.dispose()
    return Decimal(total or 0).quantize(CENT)


def test_a_focus_file_with_exponent_and_19_place_costs_reconciles_to_the_cent(
    migrated_database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = read_rows("focus_sample.csv")
    for at, row in enumerate(rows):
        for column in (*FOCUS_COSTS, "ConsumedQuantity"):
            row[column] = as_other_tools_write(row[column], at)
    rows[5]["BilledCost"] = "2.5893953072562468e-05"
    rows[6]["BilledCost"] = "0.1209620000000000001"
    rows[7]["BilledCost"] = "1.2345E+2"  # 123.45: a misread exponent would show in the total
    path = write_rows(tmp_path / "focus.csv", rows)
    code, out = ingest(capsys, migrated_database_url, "focus", path)
    assert code == 0, out
    assert "reconciliation OK" in out
    assert ledger_total(migrated_database_url, "billed_cost") == text_total(rows, "BilledCost")
    assert ledger_total(migrated_database_url, "effective_cost") == text_total(
        rows, "EffectiveCost"
    )
    assert text_total(rows, "BilledCost") > 123


def test_a_cur_csv_with_float_text_costs_reconciles_to_the_cent(
    migrated_database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = read_rows("sample-anonymous-aws-export-dataset.csv")
    for at, row in enumerate(rows):
        row[CUR_COST] = as_other_tools_write(row[CUR_COST], at)
        row[CUR_AMOUNT] = as_other_tools_write(row[CUR_AMOUNT], at + 1)
    rows[3][CUR_COST] = "2.5893953072562468e-05"
    rows[4][CUR_COST] = "7.5e+1"
    path = write_rows(tmp_path / "cur.csv", rows)
    code, out = ingest(capsys, migrated_database_url, "cur", path)
    assert code == 0, out
    assert "reconciliation OK" in out
    assert ledger_total(migrated_database_url, "billed_cost") == text_total(rows, CUR_COST)
    assert text_total(rows, CUR_COST) > 75


def test_parquet_decimals_with_more_places_than_the_ledger_are_rounded_once(
    migrated_database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A decimal(38, 18) cost column (wider than the ledger's 10 places), as Spark writes one
    path = cur_file(tmp_path)
    table = pq.read_table(path)
    costs = [Decimal("0.123456789012345678"), Decimal("0.000000000050000001"), Decimal("2.5")]
    at = table.column_names.index("line_item_unblended_cost")
    table = table.set_column(at, "line_item_unblended_cost", pa.array(costs, pa.decimal128(38, 18)))
    pq.write_table(table, path)
    code, out = ingest(capsys, migrated_database_url, "cur", path)
    assert code == 0, out
    assert ledger_total(migrated_database_url, "billed_cost") == sum(costs).quantize(CENT)


FOCUS_NON_NUMBERS = [
    (2, "BilledCost", "abc"),
    (3, "BilledCost", "1.2.3"),
    (1, "EffectiveCost", "NaN"),
    (4, "BilledCost", "inf"),
    (2, "BilledCost", "-Infinity"),
    (3, "BilledCost", "1e999"),
    (1, "BilledCost", "1,234.50"),
    (4, "ConsumedQuantity", "twelve"),
]


@pytest.mark.parametrize(("row", "column", "value"), FOCUS_NON_NUMBERS)
def test_a_focus_value_that_is_not_a_number_is_refused_by_file_row_column_and_value(
    migrated_database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    row: int,
    column: str,
    value: str,
) -> None:
    rows = read_rows("focus_sample.csv", 4)
    rows[0]["BilledCost"] = "2.5893953072562468e-05"  # read exactly, not the problem
    rows[row - 1][column] = value
    path = write_rows(tmp_path / "export.csv", rows)
    code, out = ingest(capsys, migrated_database_url, "focus", path)
    assert code == 2, out
    assert out.startswith(f"error: {path}: row {row}, column {column}: {value!r}"), out
    assert out.count("\n") == 1, out
    assert "unexpected" not in out and "decimal128" not in out
    assert nothing_written(migrated_database_url)


@pytest.mark.parametrize(
    ("row", "column", "value"),
    [(2, CUR_COST, "abc"), (5, CUR_COST, "nan"), (3, CUR_AMOUNT, "1.2.3")],
)
def test_a_cur_value_that_is_not_a_number_is_refused_by_file_row_column_and_value(
    migrated_database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    row: int,
    column: str,
    value: str,
) -> None:
    rows = read_rows("sample-anonymous-aws-export-dataset.csv", 6)
    rows[0][CUR_COST] = "0.1209620000000000001"
    rows[row - 1][column] = value
    path = write_rows(tmp_path / "cur.csv", rows)
    code, out = ingest(capsys, migrated_database_url, "cur", path)
    assert code == 2, out
    assert out.startswith(f"error: {path}: row {row}, column {column}: {value!r}"), out
    assert "not a number" in out
    assert nothing_written(migrated_database_url)


def test_a_nan_double_in_parquet_is_refused_by_row(
    migrated_database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = cur_file(tmp_path)
    table = pq.read_table(path)
    at = table.column_names.index("line_item_unblended_cost")
    table = table.set_column(at, "line_item_unblended_cost", pa.array([1.5, float("nan"), 2.0]))
    pq.write_table(table, path)
    code, out = ingest(capsys, migrated_database_url, "cur", path)
    assert code == 2, out
    assert out.startswith(f"error: {path}: row 2, column line_item_unblended_cost: 'nan'"), out
    assert nothing_written(migrated_database_url)


@pytest.mark.parametrize(
    ("row", "column", "value"),
    [
        (2, "ChargePeriodStart", "2024-13-45 99:00:00"),
        (3, "ChargePeriodStart", "01/02/2024"),
        (1, "ChargePeriodStart", "yesterday"),
        (4, "ChargePeriodStart", "2024-02-30T00:00:00Z"),
        (2, "ChargePeriodEnd", "soon"),
        (3, "BillingPeriodStart", "2024-09-01T00:00:00+25:00"),
    ],
)
def test_a_bad_date_is_refused_by_file_row_column_and_value(
    migrated_database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    row: int,
    column: str,
    value: str,
) -> None:
    rows = read_rows("focus_sample.csv", 4)
    rows[row - 1][column] = value
    path = write_rows(tmp_path / "export.csv", rows)
    code, out = ingest(capsys, migrated_database_url, "focus", path)
    assert code == 2, out
    assert out.startswith(f"error: {path}: row {row}, column {column}: bad date {value!r}"), out
    assert "ISO 8601" in out and "timestamp[" not in out
    assert out.count("\n") == 1, out
    assert nothing_written(migrated_database_url)


def test_an_empty_charge_date_is_refused_by_row(
    migrated_database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = read_rows("focus_sample.csv", 4)
    rows[2]["ChargePeriodStart"] = ""
    path = write_rows(tmp_path / "export.csv", rows)
    code, out = ingest(capsys, migrated_database_url, "focus", path)
    assert code == 2, out
    assert out.startswith(f"error: {path}: row 3, column ChargePeriodStart: is empty"), out
    assert nothing_written(migrated_database_url)


def test_a_bad_cur_date_is_refused_by_row(
    migrated_database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = read_rows("sample-anonymous-aws-export-dataset.csv", 6)
    rows[4]["lineItem/UsageStartDate"] = "2023-11-01T25:00:00.000Z"
    path = write_rows(tmp_path / "cur.csv", rows)
    code, out = ingest(capsys, migrated_database_url, "cur", path)
    assert code == 2, out
    assert out.startswith(f"error: {path}: row 5, column lineItem/UsageStartDate: bad date"), out
    assert nothing_written(migrated_database_url)


DATE_FORMS: dict[str, Callable[[dt.datetime], str]] = {
    "FOCUS": lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ"),
    "milliseconds": lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
    "Azure's 7 places": lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.0000000Z"),
    "nanoseconds": lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.000000000Z"),
    "offset": lambda t: t.strftime("%Y-%m-%dT%H:%M:%S+00:00"),
    "offset without colon": lambda t: t.strftime("%Y-%m-%dT%H:%M:%S+0000"),
    "pandas": lambda t: t.strftime("%Y-%m-%d %H:%M:%S+00:00"),
    "space before the offset": lambda t: t.strftime("%Y-%m-%dT%H:%M:%S +00:00"),
    "space, no zone": lambda t: t.strftime("%Y-%m-%d %H:%M:%S"),
    "T, no zone": lambda t: t.strftime("%Y-%m-%dT%H:%M:%S"),
    "no seconds": lambda t: t.strftime("%Y-%m-%dT%H:%MZ"),
    "UTC suffix": lambda t: t.strftime("%Y-%m-%d %H:%M:%S UTC"),
    "lower case": lambda t: t.strftime("%Y-%m-%dt%H:%M:%Sz"),
    "date only": lambda t: t.strftime("%Y-%m-%d"),
}
DATE_COLUMNS = ("ChargePeriodStart", "ChargePeriodEnd", "BillingPeriodStart", "BillingPeriodEnd")


@pytest.mark.parametrize("form", list(DATE_FORMS))
def test_each_date_form_focus_allows_is_read(
    migrated_database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], form: str
) -> None:
    rows = read_rows("focus_sample.csv", 20)
    days = set()
    for row in rows:
        days.add(row["ChargePeriodStart"][:10])
        for column in DATE_COLUMNS:
            moment = dt.datetime.strptime(row[column], "%Y-%m-%d %H:%M:%S")
            row[column] = DATE_FORMS[form](moment)
    path = write_rows(tmp_path / "export.csv", rows)
    code, out = ingest(capsys, migrated_database_url, "focus", path)
    assert code == 0, out
    engine = create_engine(migrated_database_url)
    try:
        with engine.connect() as conn:
            stored = {d.isoformat() for d in conn.execute(select(DailySpend.day)).scalars()}
    finally:
        engine.dispose()
    assert stored == days
    assert ledger_total(migrated_database_url, "billed_cost") == text_total(rows, "BilledCost")


ATHENA_HEADER = ["day", "billing_period", "billing_account", "service", "billed", "effective"]


def athena_source(rows: list[list[str]]) -> AthenaSource:
    """An Athena source whose query (on moto) answers with these rows."""
    data = [{"Data": [{"VarCharValue": v} for v in r]} for r in [ATHENA_HEADER, *rows]]
    results = {
        "results": [
            {"rows": data, "column_info": [{"Name": h, "Type": "varchar"} for h in ATHENA_HEADER]}
        ],
        "region": "us-east-1",
    }
    answer = requests.post(
        "http://motoapi.amazonaws.com/moto-api/static/athena/query-results", json=results, timeout=5
    )
    assert answer.status_code == 201
    athena = boto3.client("athena", region_name="us-east-1")
    return AthenaSource(
        athena, database="cur", table="cur", month="2026-11", output="s3://r/", sleep=lambda s: 0
    )


@mock_aws
def test_athena_sums_written_as_doubles_are_read_exactly() -> None:
    # Athena prints a SUM of doubles with an exponent: 2.5893953072562468E-5
    day = ["2026-11-01", "2026-11-01", "111", "Amazon EC2"]
    data = athena_source(
        [[*day, "2.5893953072562468E-5", "1.5E2"], [*day, "0.1209620000000000001", "1"]]
    ).read(set())
    assert data.billed_total == {"USD": Decimal("0.1209878940")}
    assert data.effective_total == {"USD": Decimal(151)}


@mock_aws
def test_an_athena_value_that_is_not_a_number_is_refused_by_row() -> None:
    day = ["2026-11-01", "2026-11-01", "111", "Amazon EC2"]
    source = athena_source([[*day, "1", "1"], [*day, "NaN", "1"]])
    with pytest.raises(IngestError) as caught:
        source.read(set())
    assert str(caught.value).startswith(
        "athena:cur.cur/2026-11: query result row 2, column billed: 'NaN' is not a number"
    ), caught.value
