"""Command-line steps shared by the end-to-end CLI tests."""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from bot.cli import main
from tests.conftest import DATA


def import_registry_file(database_url: str, directory: Path, text: str) -> list[str]:
    """Write registry.yaml, import it with `mlcost registry import`; return the database args."""
    registry = directory / "registry.yaml"
    registry.write_text(text)
    db = ["--database-url", database_url]
    assert main([*db, "registry", "import", str(registry)]) == 0
    return db


def write_focus_rows(path: Path, rows: Iterable[Mapping[str, str]]) -> Path:
    """Write a FOCUS export in the sample's columns: its first row, changed as each row says."""
    with (DATA / "focus_sample.csv").open(newline="") as source:
        reader = csv.DictReader(source)
        header = list(reader.fieldnames or [])
        template = next(reader)
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=header, quoting=csv.QUOTE_ALL)
        writer.writeheader()
        for changes in rows:
            row = {**template, **changes}
            writer.writerow({k: ("" if v == "NULL" else v) for k, v in row.items()})
    return path


def focus_days_file(
    path: Path, days: Sequence[dt.date], *, model: str, cost: str = "10.00"
) -> Path:
    """Write a FOCUS export with one charge a day, tagged ml:model=model (the sample's columns)."""
    return write_focus_rows(
        path,
        (
            {
                "BilledCost": cost,
                "EffectiveCost": cost,
                "ListCost": cost,
                "BillingPeriodStart": f"{day.replace(day=1)} 00:00:00",
                "BillingPeriodEnd": f"{next_month(day)} 00:00:00",
                "ChargePeriodStart": f"{day} 10:00:00",
                "ChargePeriodEnd": f"{day} 11:00:00",
                "ResourceId": f"i-{model}-{index}",
                "Id": str(700000 + index),
                "Tags": json.dumps({"ml:model": model}),
            }
            for index, day in enumerate(days)
        ),
    )


def next_month(day: dt.date) -> dt.date:
    """Return the first day of the month after day's."""
    return (day.replace(day=1) + dt.timedelta(days=32)).replace(day=1)


def ingest_focus_days(
    db: list[str], directory: Path, days: Sequence[dt.date], *, model: str, cost: str = "10.00"
) -> None:
    """Ingest one FOCUS charge a day for the model with `mlcost ingest focus`."""
    export = focus_days_file(
        directory / f"focus-{days[0]}-{days[-1]}.csv", days, model=model, cost=cost
    )
    assert main([*db, "ingest", "focus", str(export)]) == 0


def days_back(last: dt.date, count: int) -> list[dt.date]:
    """Return the `count` days ending on `last`, oldest first."""
    return [last - dt.timedelta(days=back) for back in range(count - 1, -1, -1)]


def freeze_cli_clock(monkeypatch: pytest.MonkeyPatch, when: dt.datetime) -> None:
    """Make `mlcost` commands in this process read `when` from their clock (and services')."""
    import bot.cli.context

    monkeypatch.setattr(bot.cli.context, "cli_clock", lambda: when)
