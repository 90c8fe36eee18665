"""One precision per money column in terminal tables; CSV and JSON carry the currency (issue 12,
item 8)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from decimal import Decimal

import pytest

from bot.cli import main
from bot.db.engine import session_scope
from bot.money import column_places
from bot.slack.blocks.waste import render_waste_json, render_waste_text
from bot.waste.checks import WasteFinding
from bot.waste.findings import WasteOverview
from tests.support.alert_walk import add_spend, seed_walk, spend_row
from tests.support.database import migrated

REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
  - {name: platform, channel: C0PLATFORM, owners: [U0PPP111]}
models:
  - {name: alpha, team: ranking, owners: [U0AAA111]}
  - {name: beta, team: ranking, owners: [U0BBB111]}
  - {name: gamma, team: platform, owners: [U0PPP111]}
budgets:
  - {scope: "model:alpha", monthly: 50, thresholds: [100]}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
"""
NOV_3, NOV_4 = dt.date(2026, 11, 3), dt.date(2026, 11, 4)
MONEY = re.compile(r"[$€](-?[\d,]+(?:\.(\d+))?)")


def euro(row: dict[str, object]) -> dict[str, object]:
    return {**row, "currency": "EUR"}


@pytest.fixture
def db(database_url: str) -> list[str]:
    """A ledger in two currencies: dollars from $12.34 to $1,234.50, euros all over 100."""
    with migrated(database_url) as (_engine, factory):
        seed_walk(factory, REGISTRY)
        with session_scope(factory) as session:
            add_spend(
                session,
                [
                    spend_row(NOV_3, "alpha", "training", "ranking", "1234.5"),
                    spend_row(NOV_4, "alpha", "storage", "ranking", "345.25"),
                    spend_row(NOV_3, "beta", "serving", "ranking", "12.34"),
                    {
                        **spend_row(NOV_4, None, "other", None, "150", service="AWS Lambda"),
                        "model_tag_value": "old-ranker",  # a model nobody registered: waste
                    },
                    euro(spend_row(NOV_3, "gamma", "serving", "platform", "150.40")),
                    euro(spend_row(NOV_4, "gamma", "training", "platform", "980.10")),
                ],
            )
    return ["--database-url", database_url]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def sections(table: str) -> dict[str, list[str]]:
    """Split a multi-currency spend table into each currency's lines."""
    found: dict[str, list[str]] = {}
    current = None
    for line in table.splitlines():
        if re.fullmatch(r"[A-Z]{3}:", line):
            current = line[:3]
            found[current] = []
        elif current:
            found[current].append(line)
    return found


def precisions(lines: list[str]) -> set[int]:
    """Return the decimals of every amount in the lines."""
    return {len(m.group(2) or "") for line in lines for m in MONEY.finditer(line)}


@pytest.mark.parametrize(
    ("by", "dollar_places"),
    # cents where a line is under $100 (beta's $12.34 serving), whole dollars where none is
    [("model", 2), ("team", 0), ("stage", 2), ("day", 0), ("model,stage", 2)],
)
def test_report_spend_table_has_one_precision_per_currency(
    db: list[str], capsys: pytest.CaptureFixture[str], by: str, dollar_places: int
) -> None:
    table = run(capsys, *db, "report", "spend", "--month", "2026-11", "--by", by)
    found = sections(table)
    assert set(found) == {"USD", "EUR"}
    assert precisions(found["USD"]) == {dollar_places}  # lines and totals alike
    assert precisions(found["EUR"]) == {0}  # every euro amount over 100 (zero is exact)
    assert "total billed EUR: €1,130" in table  # 1,130.50 to the even euro
    assert "total billed USD: $1,742" in table


def test_report_spend_table_in_one_currency_lines_up(
    db: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    table = run(capsys, *db, "report", "spend", "--month", "2026-11", "--by", "model")
    money_cells = [m.group(0) for line in table.splitlines() for m in MONEY.finditer(line)]
    assert "$12.34" in money_cells and "$1,579.75" in money_cells
    assert "$1,580" not in table  # not whole dollars next to cents


@pytest.mark.parametrize("by", ["model", "team", "stage", "day", "model,stage"])
def test_report_spend_csv_carries_the_currency_in_its_column(
    db: list[str], capsys: pytest.CaptureFixture[str], by: str
) -> None:
    out = run(capsys, *db, "report", "spend", "--month", "2026-11", "--by", by, "--format", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    header = rows[0]
    assert header == [*by.split(","), "currency", "cost", "gpu_hours"]
    where = header.index("currency")
    body = [r for r in rows[1:] if r]
    assert body and all(len(r) == len(header) for r in body)
    assert {r[where] for r in body} == {"USD", "EUR"}
    cost = header.index("cost")
    for code, billed in (("USD", Decimal("1742.09")), ("EUR", Decimal("1130.50"))):
        assert sum(Decimal(r[cost]) for r in body if r[where] == code) == billed
    args = ("report", "spend", "--month", "2026-11", "--by", by, "--format", "csv", "--totals")
    totals = list(csv.DictReader(io.StringIO(run(capsys, *db, *args))))
    assert {r["currency"]: Decimal(r["billed"]) for r in totals} == {
        "USD": Decimal("1742.09"),
        "EUR": Decimal("1130.50"),
    }


@pytest.mark.parametrize("by", ["model", "day"])
def test_report_spend_json_carries_the_currency_of_every_amount(
    db: list[str], capsys: pytest.CaptureFixture[str], by: str
) -> None:
    out = run(capsys, *db, "report", "spend", "--month", "2026-11", "--by", by, "--format", "json")
    data = json.loads(out)
    assert data["rows"] and all(r["currency"] in ("USD", "EUR") for r in data["rows"])
    assert [t["currency"] for t in data["totals"]] == ["EUR", "USD"]


def test_review_show_json_carries_the_currency(
    db: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(capsys, *db, "review", "show", "--month", "2026-11", "--format", "json")
    data = json.loads(out)
    assert data and {e["model"]: e["currency"] for e in data}["alpha"] == "USD"
    assert all(e["currency"] in ("USD", "EUR") for e in data)


def test_waste_json_carries_the_currency(
    db: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLCOST_CURRENCY", "USD")
    out = run(capsys, *db, "report", "waste", "--as-of", "2026-11-05", "--format", "json")
    data = json.loads(out)
    assert data["currency"] == "USD"
    assert data["findings"]  # $150 of Lambda tagged with a model nobody registered
    assert all(f["currency"] == "USD" for f in data["findings"])
    assert "`" not in out  # no Slack code spans in JSON


def test_waste_text_has_no_slack_markup(db: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, *db, "report", "waste", "--as-of", "2026-11-05")
    assert "old-ranker" in out and "`" not in out


def finding(cost: str, subject: str) -> WasteFinding:
    return WasteFinding("orphaned", subject, Decimal(cost), "evidence", "fix it")


def overview(currency: str, *found: WasteFinding) -> WasteOverview:
    """Ledger findings only, as report waste shows them."""
    now = dt.datetime(2026, 11, 5, tzinfo=dt.UTC)
    return WasteOverview(list(found), [], [], [], [], currency, now)


def test_waste_text_amounts_share_one_precision() -> None:
    text = render_waste_text(overview("EUR", finding("1234.56", "big"), finding("45.10", "small")))
    assert precisions(text.splitlines()) == {2}
    assert "€1,234.56/mo" in text and "€45.10/mo" in text and "about €1,279.66/month" in text
    whole = render_waste_text(overview("USD", finding("1234.56", "big"), finding("450.10", "mid")))
    assert precisions(whole.splitlines()) == {0}
    # each finding's evidence starts under its label
    first, evidence = whole.splitlines()[:2]
    assert len(evidence) - len(evidence.lstrip()) == first.index("/mo") + len("/mo  ")


def test_waste_json_amounts_are_exact_strings_with_their_currency() -> None:
    data = json.loads(render_waste_json(overview("EUR", finding("45.10", "small")), NOV_4))
    assert data["currency"] == "EUR" and data["monthly_total"] == "45.10"
    assert data["findings"][0]["currency"] == "EUR"


def test_gate_shows_spend_and_budget_with_one_precision(
    db: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*db, "gate", "alpha", "--as-of", "2026-11-05"])
    out = capsys.readouterr().out
    assert code == 1
    assert "model:alpha is over budget in 2026-11: $1,579.75 of $50.00" in out


def test_column_places() -> None:
    assert column_places([Decimal("1234.5"), Decimal("100")]) == 0
    assert column_places([Decimal("1234.5"), Decimal("99.99")]) == 2
    assert column_places([Decimal("-5"), Decimal("500")]) == 2  # a credit is an amount too
    assert column_places([Decimal(0), None, Decimal("500")]) == 0  # $0 is exact
    assert column_places([]) == 0
