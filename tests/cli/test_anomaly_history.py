"""Anomaly baselines from covered days only: a gap in the ledger is unknown, not $0.

One month of 2024, then a new provider's export for November 2026: the 22 months between
are days no source had data for. They are not a baseline of zeros that makes every November
day of training "unusual".
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from pathlib import Path

import pytest

from bot.cli import main
from bot.cli.poll_cmd import short_history_line
from tests.support.alert_walk import days
from tests.support.cli import import_registry_file

REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - {name: alpha, team: ranking, owners: [U0AAA111]}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
"""
COLUMNS = [
    "ProviderName",
    "BillingAccountId",
    "BillingCurrency",
    "BillingPeriodStart",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ServiceName",
    "ResourceId",
    "BilledCost",
    "EffectiveCost",
    "Tags",
]


def write_focus(path: Path, provider: str, account: str, costs: dict[dt.date, str]) -> Path:
    """Write a FOCUS export: one training charge of alpha per day."""
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(COLUMNS)
        for day, cost in costs.items():
            writer.writerow(
                [
                    provider,
                    account,
                    "USD",
                    f"{day.replace(day=1)} 00:00:00",
                    f"{day} 00:00:00",
                    f"{day + dt.timedelta(days=1)} 00:00:00",
                    "Usage",
                    "GPU Compute",
                    f"gpu-{provider.lower()}-1",
                    cost,
                    cost,
                    json.dumps({"ml:model": "alpha", "ml:stage": "training"}),
                ]
            )
    return path


def ingest_2024_then_november_2026(
    database_url: str, tmp_path: Path, last: dt.date, spike: str | None = None
) -> list[str]:
    """Import the registry, January 2024 from AWS, and Nov 1..last 2026 from a new provider
    ($400 or $450 a day; `spike` on the last day)."""
    db = import_registry_file(database_url, tmp_path, REGISTRY)
    january = {d: "100" for d in days(dt.date(2024, 1, 1), dt.date(2024, 2, 1))}
    november = {
        d: ("450" if d.day % 2 else "400")
        for d in days(dt.date(2026, 11, 1), last + dt.timedelta(days=1))
    }
    if spike is not None:
        november[last] = spike
    old = write_focus(tmp_path / "aws-2024-01.csv", "AWS", "111111111111", january)
    new = write_focus(tmp_path / "neocloud-2026-11.csv", "NeoCloud", "nc-42", november)
    assert main([*db, "ingest", "focus", str(old)]) == 0
    assert main([*db, "ingest", "focus", str(new)]) == 0
    return db


def test_days_no_source_covered_are_no_baseline_of_zeros(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ingest_2024_then_november_2026(database_url, tmp_path, dt.date(2026, 11, 6))
    capsys.readouterr()
    assert main([*db, "poll", "--as-of", "2026-11-06", "--dry-run", "--only", "anomalies"]) == 0
    out = capsys.readouterr().out
    assert "Unusual" not in out
    assert "as of 2026-11-06: 0 budgets evaluated, 0 alerts due (would post)" in out
    # the dry run says which scopes it could not judge, and with how much history
    assert (
        "skipped 2 scopes with less than 14 days of history: model:alpha (5 days), "
        "stage:training (5 days)"
    ) in out


def test_a_spike_is_judged_against_the_covered_days_once_there_are_enough(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ingest_2024_then_november_2026(database_url, tmp_path, dt.date(2026, 11, 20), "2000")
    capsys.readouterr()
    assert main([*db, "poll", "--as-of", "2026-11-20", "--dry-run", "--only", "anomalies"]) == 0
    out = capsys.readouterr().out
    # Nov 15-20 have 14 or more covered days before them; the usual of Nov 20 is the median
    # of Nov 1-19 ($450: ten days at $450, nine at $400), not of 28 days mostly without data
    unusual = [line.split(None, 1)[1] for line in out.splitlines() if "Unusual" in line]
    assert unusual == [
        "Unusual spend for model:alpha on Nov 20: $1,550 above usual.",
        "Unusual spend for stage:training on Nov 20: $1,550 above usual.",
    ]
    # Nov 14, the re-check window's first day, had 13 covered days before it: not judged
    assert "skipped 2 scopes with less than 14 days of history: model:alpha (13 days)" in out


def test_the_skipped_line_names_at_most_ten_scopes() -> None:
    assert short_history_line({"stage:training": 1}, 14) == (
        "anomalies: skipped 1 scope with less than 14 days of history: stage:training (1 day)"
    )
    many = {f"model:m{i:02}": i for i in range(12)}
    line = short_history_line(many, 14)
    assert line.startswith("anomalies: skipped 12 scopes with less than 14 days of history: ")
    assert line.endswith("model:m09 (9 days), and 2 more")
