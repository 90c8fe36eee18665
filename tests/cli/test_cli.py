"""The `mlcost` command line end to end, on a fresh database per test."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from bot.cli import main
from tests.conftest import DATA
from tests.helpers import REGISTRY


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_registry_ingest_and_report(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = tmp_path / "registry.yaml"
    registry.write_text(REGISTRY)
    db = ["--database-url", database_url]
    code, out, _ = run(capsys, *db, "registry", "import", str(registry))
    assert code == 0 and "4 models" in out
    code, out, _ = run(capsys, *db, "ingest", "focus", str(DATA / "focus_sample.csv"))
    assert code == 0
    assert "read 1,000 rows" in out
    assert "reconciliation OK: billed 20.52 USD = attributed" in out
    code, out, _ = run(
        capsys,
        *db,
        "report",
        "spend",
        "--month",
        "2024-09",
        "--by",
        "model,stage",
        "--format",
        "json",
    )
    data = json.loads(out)
    [usd] = data["totals"]  # the sample is billed in USD only
    assert usd.pop("currency") == "USD"
    totals = {k: Decimal(v) for k, v in usd.items()}
    assert totals["attributed"] + totals["unallocated"] == totals["billed"]
    assert {r["currency"] for r in data["rows"]} == {"USD"}
    assert data["cost_basis"] == "billed"
    assert sum(Decimal(r["cost"]) for r in data["rows"]) == totals["billed"]
    code, out, _ = run(
        capsys, *db, "report", "spend", "--month", "2024-09", "--by", "team", "--cost", "effective"
    )
    assert "cost shown: effective" in out
    code, out, _ = run(capsys, *db, "registry", "export")
    assert "brightpath" in out and code == 0


def test_bad_inputs_exit_non_zero_with_one_line(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--database-url", database_url]
    bad = tmp_path / "broken.csv"
    bad.write_text("BilledCost,ChargePeriodStart\n1,2024-01-01\n")
    code, out, err = run(capsys, *db, "ingest", "focus", str(bad))
    assert code == 2
    assert err.strip().count("\n") == 0
    assert str(bad) in err and "missing FOCUS column" in err
    registry = tmp_path / "r.yaml"
    registry.write_text(REGISTRY.replace("team: ranking, owners", "team: nope, owners"))
    code, _, err = run(capsys, *db, "registry", "import", str(registry))
    assert code == 2 and "unknown team 'nope'" in err
    code, _, err = run(capsys, *db, "report", "spend", "--month", "2024-13")
    assert code == 2 and "not a month" in err
    code, out, _ = run(capsys, *db, "report", "spend", "--month", "2024-09", "--format", "json")
    assert json.loads(out)["totals"] == []  # no spend: no currency, no total


def test_demo_runs_twice_harmlessly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, first, _ = run(capsys, "demo", "--dir", str(tmp_path / "demo"))
    assert code == 0
    assert "reconciliation OK" in first
    code, second, _ = run(capsys, "demo", "--dir", str(tmp_path / "demo"))
    assert code == 0
    assert "0 created, 0 updated" in second
    total = [line for line in first.splitlines() if line.startswith("total billed")]
    assert total and total == [
        line for line in second.splitlines() if line.startswith("total billed")
    ]
    # the export poll re-reads November (December has no folder yet) and replaces it
    poll = next(line for line in second.splitlines() if line.startswith("re-read "))
    assert "(billing periods 2026-11, 2026-12): 1,470 rows, replaced 1,470 ledger rows" in poll
    assert "2026-11 billed $94,587 before, $94,587 after" in poll


def test_cost_explorer_command_through_moto(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from moto import mock_aws
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.moto_api._internal.models import moto_api_backend

    registry = tmp_path / "registry.yaml"
    registry.write_text(REGISTRY)
    db = ["--database-url", database_url]
    response = json.loads((DATA / "test_query_total_costs_per_hub-input.json").read_text())
    response.pop("ResponseMetadata", None)
    with mock_aws():
        moto_api_backend.set_ce_cost_usage(result=response, account_id=DEFAULT_ACCOUNT_ID)
        assert run(capsys, *db, "registry", "import", str(registry))[0] == 0
        code, out, err = run(
            capsys,
            *db,
            "ingest",
            "cost-explorer",
            "--start",
            "2026-06-20",
            "--end",
            "2026-06-28",
            "--account",
            "123456789012",
        )
    assert code == 0, err
    assert "1 API requests" in out
    assert "reconciliation OK" in out


def test_demo_shows_the_slack_model_report_and_writes_its_chart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "demo", "--dir", str(tmp_path / "demo"))
    assert code == 0
    assert "month to date   $17,139 (data through 2026-11-20)" in out
    assert "forecast        $28,131 (weekday run-rate over 28 days)" in out
    png = (tmp_path / "demo" / "recsys-2026-11.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_waste_on_the_demo_org(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "demo"
    assert run(capsys, "demo", "--dir", str(folder))[0] == 0
    url = f"sqlite:///{folder / 'mlcost-demo.db'}"
    code, out, _ = run(capsys, "--database-url", url, "report", "waste", "--as-of", "2026-11-30")
    assert code == 0
    assert "Orphaned (tagged for an unregistered model): `legacy-ranker`" in out
    assert "Idle endpoint: churn-predictor" in out
    # recsys trains on p4d.24xlarge on demand in us-east-1: 67 % cheaper on Spot, 10-15 % band
    assert "Spot candidate: `recsys` training on p4d.24xlarge in us-east-1" in out
    assert "67 % below on-demand" in out
    assert out.rstrip().splitlines()[-1].startswith("total: about $")
    code, out, _ = run(capsys, "--database-url", url, "report", "waste", "--as-of", "2026-11-30",
                       "--format", "json")  # fmt: skip
    data = json.loads(out)
    costs = [Decimal(f["monthly_cost"]) for f in data["findings"]]
    assert code == 0 and data["as_of"] == "2026-11-30"
    assert Decimal(data["monthly_total"]) == sum(costs) and costs == sorted(costs, reverse=True)
    spot = next(f for f in data["findings"] if f["kind"] == "spot_candidate")
    assert spot["model"] == "recsys" and spot["label"] == "Spot candidate"
    with pytest.raises(SystemExit) as exited:
        main(["--database-url", url, "report", "waste", "--as-of", "2026-13-01"])
    assert exited.value.code == 2
    assert "invalid fromisoformat value: '2026-13-01'" in capsys.readouterr().err


def test_an_unreadable_spot_feed_is_a_clear_error_for_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "demo"
    assert run(capsys, "demo", "--dir", str(folder))[0] == 0
    feed = tmp_path / "feed.json"
    feed.write_text("<html>Access Denied</html>")
    monkeypatch.setenv("MLCOST_SPOT_ADVISOR_FILE", str(feed))
    url = f"sqlite:///{folder / 'mlcost-demo.db'}"
    code, out, err = run(capsys, "--database-url", url, "report", "waste", "--as-of", "2026-11-30")
    assert code != 0 and out == ""
    assert f"cannot read the Spot Instance Advisor feed {feed}" in err
