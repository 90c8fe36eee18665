"""`mlcost ingest value`, `mlcost review show` and the demo's unit-economics steps."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from bot.cli import main
from bot.cli.review_cmd import render_economics
from bot.economics.unit_costs import ModelEconomics, PeriodUsage
from bot.economics.verdicts import Verdict, VerdictKind
from bot.periods import month_period, previous_month
from tests.cli.conftest import DemoRun
from tests.support.cli import import_registry_file
from tests.support.economics_seed import REGISTRY


def test_ingest_value_is_all_or_nothing_and_review_show(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = import_registry_file(database_url, tmp_path, REGISTRY)
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "date,model,metric,units\n2026-11-01,recsys,predictions,10\n"
        "2026-11-02,recsys,predictions,-4\n"
    )
    capsys.readouterr()
    assert main([*db, "ingest", "value", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}:3: units:") and err.count("\n") == 1
    good = tmp_path / "good.csv"
    good.write_text(
        "date,model,metric,units,revenue\n2026-11-01,recsys,predictions,2k,12.5\n"
        "2026-10-01,recsys,predictions,1000,\n"
    )
    for _ in range(2):
        assert main([*db, "ingest", "value", str(good)]) == 0
    assert "recorded 2 value rows" in capsys.readouterr().out
    assert main([*db, "review", "show", "--month", "2026-11", "--format", "json"]) == 0
    data = {row["model"]: row for row in json.loads(capsys.readouterr().out)}
    assert Decimal(data["recsys"]["current"]["units"]) == 2000  # the bad file changed nothing
    assert Decimal(data["recsys"]["current"]["revenue"]) == Decimal("12.5")
    assert Decimal(data["recsys"]["previous"]["units"]) == 1000


def test_demo_prints_unit_economics_verdicts_and_gates(demo_run: DemoRun) -> None:
    out = demo_run.out
    assert "1,001 value rows for 11 models" in out
    assert "! recsys: Cost incident — cost up, value flat or down" in out
    assert "! churn-predictor: Cost with no value" in out
    assert "gate PASS: search-ranker" in out and "gate FAIL: recsys" in out
    assert "FAIL budget: embeddings has no budget" in out


def _economics(model: str, cost: str, units: int) -> ModelEconomics:
    month = month_period("2026-11")
    current = PeriodUsage(month, cost=Decimal(cost), units=Decimal(units))
    previous = PeriodUsage(previous_month(month), cost=Decimal(cost), units=Decimal(units))
    verdict = Verdict(VerdictKind.HEALTHY, "Healthy", "")
    return ModelEconomics(model, "team", "predictions", current, previous, verdict)


def test_review_show_uses_one_precision_per_money_column() -> None:
    """A column mixing $0.0292 and $2.79 (or $85.20 and $2,788) is hard to compare: one each."""
    table = render_economics(
        [_economics("big", "2788.40", 1_000_000), _economics("small", "85.20", 2_920_000)],
        month_period("2026-11"),
    )
    rows = {line.split()[0]: line.split() for line in table.splitlines()[3:]}
    assert rows["big"][1] == "$2,788.40" and rows["small"][1] == "$85.20"
    # cost per 1k: 2.7884 and 0.029178..., both with four decimals (now and the month before)
    assert rows["big"].count("$2.7884") == 2 and rows["small"].count("$0.0292") == 2
