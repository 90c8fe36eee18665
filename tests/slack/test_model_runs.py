"""`/mlcost model <name>`: the month's most expensive training runs, over signed requests."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pandas as pd
from sqlalchemy.orm import Session

from bot.money import format_money
from tests.slack.test_report_commands import all_text
from tests.support.demo_org import DEMO_DATA
from tests.support.ledger import ingestion_run, spend_record
from tests.support.sample_registry import load_registry
from tests.support.slack_app import SlackHarness, seed

HOSTILE = "sweep <!channel> <https://evil.example|click> & `x`"


def runs_section(reply: dict) -> str:
    (section,) = [
        b["text"]["text"]
        for b in reply["blocks"]
        if b.get("text", {}).get("text", "").startswith("*Most expensive runs")
    ]
    return section


def test_model_shows_the_months_runs_as_the_raw_billing_has_them(demo: SlackHarness) -> None:
    frame = pd.read_csv(DEMO_DATA / "billing-focus.csv.gz", dtype=str, keep_default_na=False)
    days = frame["ChargePeriodStart"].str[:10]
    frame = frame[(days >= "2026-11-01") & (days <= "2026-11-20")]  # the demo clock's month so far
    runs = [json.loads(t).get("ml:run") if t != "NULL" else None for t in frame["Tags"]]
    frame = frame.assign(run=runs).dropna(subset=["run"])
    expected = sorted(
        (
            (sum(map(Decimal, g["BilledCost"]), Decimal(0)), name)
            for name, g in frame.groupby("run")
        ),
        reverse=True,
    )
    assert len(expected) == 3

    assert demo.command("model recsys", channel="C0RANKING").status == 200
    section = runs_section(demo.responses(1)[0])
    lines = section.splitlines()[1:]
    assert [line.split("`")[1] for line in lines] == [name for _, name in expected]
    for (cost, _name), line in zip(expected, lines, strict=True):
        assert f"*{format_money(cost, 'USD')}*" in line
    assert lines[0] == "• `recsys-v42-retry` (training, Nov 18–20): *$5,368* · 1,310 GPU-h"


def _seed_runs(session: Session) -> None:
    load_registry(session)
    ingested = ingestion_run(session, location="test")
    day = dt.date(2026, 11, 10)
    rows = [(HOSTILE, "900")] + [(f"run-{n}", str(100 * n)) for n in range(1, 7)]
    for name, cost in rows:
        for offset in range(2):
            record = spend_record(
                ingested,
                day + dt.timedelta(days=offset),
                Decimal(cost) / 2,
                model="recsys",
                team="ranking",
                stage="training",
                gpu_hours=Decimal(8),
            )
            record.run = name  # spend_record's own `run` is the ingestion run
            session.add(record)
    session.add(spend_record(ingested, day, "50", model="recsys", team="ranking", stage="serving"))


def test_model_runs_are_the_top_five_with_names_escaped(slack: SlackHarness) -> None:
    seed(slack, _seed_runs)
    assert slack.command("model recsys", channel="C0RANKING").status == 200
    section = runs_section(slack.responses(1)[0])
    lines = section.splitlines()[1:]
    assert len(lines) == 5
    assert lines[0] == (
        "• `sweep &lt;!channel&gt; &lt;https://evil.example|click&gt; &amp; ˋxˋ` "
        "(training, Nov 10–11): *$900* · 16 GPU-h"
    )
    assert "<!channel>" not in section and "<https://" not in section
    assert [line.split("`")[1] for line in lines[1:]] == ["run-6", "run-5", "run-4", "run-3"]
    assert "run-2" not in section  # sixth and seventh: not shown


def test_a_model_without_runs_shows_no_runs_section(demo: SlackHarness) -> None:
    assert demo.command("model search-ranker", channel="C0RANKING").status == 200
    reply = demo.responses(1)[0]
    assert "Most expensive runs" not in all_text(reply["blocks"])
