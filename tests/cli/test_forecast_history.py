"""The forecast from covered days only, end to end: `poll --dry-run` after a gap in the ledger.

One month of 2024, then a new provider's export from Nov 1 2026: six covered days are not
enough history to forecast, so no "forecast to pass" alert is planned on a forecast that
could not be made.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from bot.cli import main
from tests.cli.test_anomaly_history import write_focus
from tests.support.alert_walk import days
from tests.support.cli import import_registry_file

REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - {name: alpha, team: ranking, owners: [U0AAA111]}
budgets:
  - {scope: "model:alpha", monthly: 10000, thresholds: [50, 80, 100], forecast: true}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
"""


def ingest(database_url: str, tmp_path: Path, last: dt.date) -> list[str]:
    """Import the registry, January 2024 from AWS, and Nov 1..last 2026 from a new provider."""
    db = import_registry_file(database_url, tmp_path, REGISTRY)
    january = {d: "100" for d in days(dt.date(2024, 1, 1), dt.date(2024, 2, 1))}
    november = {
        d: ("450" if d.day % 2 else "400")
        for d in days(dt.date(2026, 11, 1), last + dt.timedelta(days=1))
    }
    old = write_focus(tmp_path / "aws-2024-01.csv", "AWS", "111111111111", january)
    new = write_focus(tmp_path / "neocloud-2026-11.csv", "NeoCloud", "nc-42", november)
    assert main([*db, "ingest", "focus", str(old)]) == 0
    assert main([*db, "ingest", "focus", str(new)]) == 0
    return db


def test_no_forecast_alert_without_enough_covered_days(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ingest(database_url, tmp_path, dt.date(2026, 11, 6))
    capsys.readouterr()
    assert main([*db, "poll", "--as-of", "2026-11-06", "--dry-run", "--only", "budgets"]) == 0
    out = capsys.readouterr().out
    assert "forecast to pass" not in out
    assert "as of 2026-11-06: 1 budget evaluated, 0 alerts due (would post)" in out


def test_the_forecast_alert_comes_once_there_is_enough_history(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seven covered days: their $3,000, / 7 a day, makes $12,857 for November (flat: no
    weekday pattern yet), past the $10,000."""
    db = ingest(database_url, tmp_path, dt.date(2026, 11, 7))
    capsys.readouterr()
    assert main([*db, "poll", "--as-of", "2026-11-07", "--dry-run", "--only", "budgets"]) == 0
    out = capsys.readouterr().out
    assert (
        "model:alpha is forecast to pass 100 % of its 2026-11 budget: "
        "forecast $12,857 of $10,000 (129 %)" in out
    )
