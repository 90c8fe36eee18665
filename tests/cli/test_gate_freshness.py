"""The gate and `report waste` on a ledger that stopped being fed: no verdict, no all-clear."""

from __future__ import annotations

import csv
import datetime as dt
import json
from pathlib import Path

import pytest

from bot.cli import main
from tests.support.cli import (
    days_back,
    focus_days_file,
    freeze_cli_clock,
    import_registry_file,
    ingest_focus_days,
)
from tests.support.fake_slack import FakeSlack

REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - {name: recsys, team: ranking, owners: [U0AAA111], match: {tags: {"ml:model": recsys}}}
budgets:
  - {scope: "model:recsys", monthly: 100000}
"""
LAST_DAY = dt.date(2026, 11, 3)
TODAY = dt.datetime(2026, 12, 4, 9, 0, tzinfo=dt.UTC)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def outside_github(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "SLACK_BOT_TOKEN"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stale_db(
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> list[str]:
    """recsys's spend from FOCUS up to 2026-11-03; the clock reads 2026-12-04."""
    db = import_registry_file(database_url, tmp_path, REGISTRY)
    ingest_focus_days(db, tmp_path, days_back(LAST_DAY, 20), model="recsys")
    freeze_cli_clock(monkeypatch, TODAY)
    capsys.readouterr()
    return db


def test_the_gate_on_a_month_old_ledger_could_not_evaluate(
    stale_db: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, *stale_db, "gate", "recsys")
    assert code == 3
    lines = out.splitlines()
    assert lines[0] == "gate UNKNOWN: recsys (as of 2026-12-04): could not evaluate"
    assert "PASS" not in out and "no cost in the last 30 days" not in out
    assert "2026-11-03" in lines[1] and "31 days" in lines[1]
    assert "MLCOST_GATE_MAX_DATA_AGE_DAYS=3" in lines[1]
    assert "mlcost ingest focus" in lines[1]

    code, out, _ = run(capsys, *stale_db, "gate", "recsys", "--format", "json")
    assert code == 3
    answer = json.loads(out)
    assert answer["status"] == "unknown" and answer["pass"] is None and answer["checks"] == []
    assert answer["data"] == {
        "last_day": "2026-11-03",
        "age_days": 31,
        "max_age_days": 3,
        "stale": True,
        "sources": [{"source": "focus", "last_day": "2026-11-03"}],
    }
    assert "2026-11-03" in answer["reasons"][0]

    code, out, _ = run(capsys, *stale_db, "gate", "recsys", "--format", "github")
    assert code == 3
    assert out.splitlines()[-1].startswith("::error title=mlcost gate::recsys: could not evaluate")


def test_the_age_limit_allows_for_billing_delay_and_is_a_setting(
    stale_db: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    freeze_cli_clock(monkeypatch, dt.datetime(2026, 11, 6, 23, 0, tzinfo=dt.UTC))  # 3 days
    code, out, _ = run(capsys, *stale_db, "gate", "recsys")
    assert code == 0 and out.startswith("gate PASS: recsys (as of 2026-11-06)")
    freeze_cli_clock(monkeypatch, dt.datetime(2026, 11, 7, 0, 1, tzinfo=dt.UTC))  # 4 days
    code, out, _ = run(capsys, *stale_db, "gate", "recsys")
    assert code == 3 and "4 days" in out
    monkeypatch.setenv("MLCOST_GATE_MAX_DATA_AGE_DAYS", "40")
    freeze_cli_clock(monkeypatch, TODAY)
    code, out, _ = run(capsys, *stale_db, "gate", "recsys")
    assert code == 0
    # an explicit --as-of asks about that day: the ledger covers it
    monkeypatch.delenv("MLCOST_GATE_MAX_DATA_AGE_DAYS")
    code, out, _ = run(capsys, *stale_db, "gate", "recsys", "--as-of", "2026-11-04")
    assert code == 0


def test_the_gate_on_an_empty_ledger_could_not_evaluate(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = import_registry_file(database_url, tmp_path, REGISTRY)
    capsys.readouterr()
    code, out, _ = run(capsys, *db, "gate", "recsys", "--as-of", "2026-12-04")
    assert code == 3
    assert out.splitlines()[0].startswith("gate UNKNOWN: recsys")
    assert "no spend" in out and "mlcost ingest" in out


def test_post_of_a_stale_gate_says_it_could_not_evaluate_and_escapes(
    stale_db: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_API_URL", fake_slack.url)
    code, out, _ = run(capsys, *stale_db, "gate", "recsys", "--post")
    assert code == 3
    assert "queued the unknown result for C0RANKING (gate/recsys/2026-12-04/unknown)" in out
    posts = fake_slack.calls_to("chat.postMessage")
    assert len(posts) == 1
    text = posts[0].params["text"]
    assert text.startswith(":warning: *recsys*: the release gate could not evaluate")
    assert "passes" not in text and "2026-11-03" in text
    blocks = json.dumps(posts[0].params["blocks"])
    assert "2026-11-03" in blocks and "mlcost ingest focus" in blocks


def test_report_waste_on_a_stale_ledger_is_no_all_clear(
    stale_db: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, *stale_db, "report", "waste")
    assert code == 0
    assert "No waste found." not in out
    first = out.splitlines()[0]
    assert first.startswith("stale data:") and "2026-11-03" in first and "focus" in first
    code, out, _ = run(capsys, *stale_db, "report", "waste", "--format", "json")
    assert json.loads(out)["data"]["stale"] is True


def test_a_monthly_fee_after_usage_stopped_does_not_make_the_ledger_fresh(
    stale_db: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tax, support or a reservation fee billed on the 1st is no sign usage data still arrives."""
    export = focus_days_file(tmp_path / "fees.csv", [dt.date(2026, 12, 1)], model="recsys")
    with export.open(newline="") as source:
        rows = list(csv.DictReader(source))
    with export.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), quoting=csv.QUOTE_ALL)
        writer.writeheader()
        for index, category in enumerate(("Tax", "Purchase")):
            writer.writerow({**rows[0], "ChargeCategory": category, "Id": f"fee-{index}"})
    assert main([*stale_db, "ingest", "focus", str(export)]) == 0
    capsys.readouterr()

    code, out, _ = run(capsys, *stale_db, "gate", "recsys")
    assert code == 3, out
    assert "PASS" not in out and "2026-11-03" in out.splitlines()[1]
    code, out, _ = run(capsys, *stale_db, "report", "waste")
    assert "No waste found." not in out and out.startswith("stale data:")
