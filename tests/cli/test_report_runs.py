"""`mlcost report spend --by run [--model M]` on the demo billing, checked against the raw file."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from bot.cli import main
from tests.support.demo_org import DEMO_DATA

BILLING = DEMO_DATA / "billing-focus.csv.gz"
MONTH = "2026-11"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def db(database_url: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    args = ["--database-url", database_url]
    assert main([*args, "registry", "import", str(DEMO_DATA / "registry.yaml")]) == 0
    assert main([*args, "ingest", "focus", str(BILLING)]) == 0
    capsys.readouterr()
    return args


@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    """The demo month's billing rows with their run and model tags, read by pandas."""
    frame = pd.read_csv(BILLING, dtype=str, keep_default_na=False)
    frame = frame[frame["ChargePeriodStart"].str.startswith(MONTH)].copy()
    tags = [json.loads(t) if t != "NULL" else {} for t in frame["Tags"]]
    frame["run"] = [t.get("ml:run") for t in tags]
    frame["model"] = [t.get("ml:model") for t in tags]
    frame["cost"] = [Decimal(v) for v in frame["BilledCost"]]
    return frame


def json_rows(capsys: pytest.CaptureFixture[str], db: list[str], *args: str) -> dict:
    code, out, err = run(
        capsys, *db, "report", "spend", "--month", MONTH, "--format", "json", *args
    )
    assert code == 0, err
    return json.loads(out)


def test_runs_and_no_run_add_up_to_the_model_report_and_the_raw_file(
    db: list[str], capsys: pytest.CaptureFixture[str], raw: pd.DataFrame
) -> None:
    by_run = json_rows(capsys, db, "--by", "run")
    by_model = json_rows(capsys, db, "--by", "model")
    run_total = sum(Decimal(r["cost"]) for r in by_run["rows"])
    model_total = sum(Decimal(r["cost"]) for r in by_model["rows"])
    raw_total = sum(raw["cost"], Decimal(0))
    assert run_total == model_total == raw_total  # exact: six places in, ten kept
    assert by_run["totals"] == by_model["totals"]

    expected = {name: sum(g["cost"], Decimal(0)) for name, g in raw.groupby("run")}
    assert len(expected) == 4  # the demo's November runs of recsys
    runs = [r for r in by_run["rows"] if r["run"] is not None]
    assert {r["run"]: Decimal(r["cost"]) for r in runs} == expected
    costs = [Decimal(r["cost"]) for r in runs]
    assert costs == sorted(costs, reverse=True)  # most expensive first
    retry = next(r for r in runs if r["run"] == "recsys-v42-retry")
    assert (retry["model"], retry["stage"]) == ("recsys", "training")
    assert (retry["first_day"], retry["last_day"]) == ("2026-11-18", "2026-11-20")
    assert Decimal(retry["gpu_hours"]) == 8 * sum(
        (Decimal(q) for q in raw.loc[raw["run"] == "recsys-v42-retry", "ConsumedQuantity"]),
        Decimal(0),
    )  # p4d.24xlarge: 8 GPUs
    (no_run,) = [r for r in by_run["rows"] if r["run"] is None]
    assert no_run["model"] is None and no_run["stage"] is None
    assert Decimal(no_run["cost"]) == sum(raw.loc[raw["run"].isna(), "cost"], Decimal(0))


def test_one_models_runs_and_its_remainder_make_its_total(
    db: list[str], capsys: pytest.CaptureFixture[str], raw: pd.DataFrame
) -> None:
    recsys = raw[raw["model"] == "recsys"]
    data = json_rows(capsys, db, "--by", "run", "--model", "recsys")
    assert {r["model"] for r in data["rows"]} == {"recsys"}
    assert sum(Decimal(r["cost"]) for r in data["rows"]) == sum(recsys["cost"], Decimal(0))
    assert Decimal(data["totals"][0]["billed"]) == sum(recsys["cost"], Decimal(0))
    assert Decimal(data["totals"][0]["unallocated"]) == 0

    code, out, _ = run(
        capsys, *db, "report", "spend", "--month", MONTH, "--by", "run", "--model", "recsys"
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split() == [
        "model", "run", "stage", "first_day", "last_day", "billed", "cost", "GPU-h"
    ]  # fmt: skip
    assert lines[3].split()[:5] == [
        "recsys", "recsys-v42-retry", "training", "2026-11-18", "2026-11-20"
    ]  # fmt: skip
    assert any(line.startswith("recsys  (no run)") for line in lines)

    code, out, _ = run(
        capsys, *db, "report", "spend", "--month", MONTH, "--by", "run", "--format", "csv"
    )
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == [
        "model", "run", "stage", "first_day", "last_day", "currency", "cost", "gpu_hours"
    ]  # fmt: skip
    body = rows[1:]  # one table: the lines alone (--totals writes the totals)
    no_run = [r for r in body if r[1] == "(no run)"]
    assert len(no_run) == 1 and no_run[0][:3] == ["", "(no run)", ""]
    assert sum(Decimal(r[6]) for r in body) == sum(raw["cost"], Decimal(0))


def test_model_filter_works_for_other_groupings_too(
    db: list[str], capsys: pytest.CaptureFixture[str], raw: pd.DataFrame
) -> None:
    data = json_rows(capsys, db, "--by", "stage", "--model", "search-ranker")
    ranker = raw[raw["model"] == "search-ranker"]
    assert sum(Decimal(r["cost"]) for r in data["rows"]) == sum(ranker["cost"], Decimal(0))


def test_bad_run_requests_are_one_clear_line_and_change_nothing(
    db: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, *db, "report", "spend", "--by", "run", "--model", "recsy")
    assert code != 0 and "No model named 'recsy'" in err and "recsys" in err
    code, _, err = run(capsys, *db, "report", "spend", "--by", "run,stage")
    assert code != 0 and "'--by run' lists training runs on its own" in err
    code, _, err = run(capsys, *db, "report", "spend", "--by", "runs")
    assert code != 0 and "run (alone)" in err


def test_the_report_on_an_empty_ledger_says_so(
    database_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(
        capsys, "--database-url", database_url, "report", "spend", "--by", "run", "--month", MONTH
    )
    assert code == 0 and "total billed: 0" in out and "the ledger is empty" in err
