"""`mlcost report chargeback`: real billing and a ledger with every shared pool, to the cent."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from decimal import Decimal

import pandas as pd
import pytest
from sqlalchemy.orm import Session

from bot.cli import main
from bot.db.engine import make_engine, make_session_factory, session_scope
from bot.ingest.ledger import ingest
from bot.ingest.sources.focus import FocusSource
from bot.money import CostBasis
from bot.periods import month_period
from bot.registry.spec import ChargebackSpec
from bot.spend.chargeback import chargeback_report, load_chargeback_policy
from tests.conftest import DATA
from tests.support.alert_walk import add_spend, spend_row
from tests.support.sample_registry import load_registry

FOCUS = DATA / "focus_sample.csv"
CENT = Decimal("0.01")
DAY = dt.date(2026, 11, 10)

CHARGEBACK_REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
  - {name: nlp, channel: C0NLP, owners: [U0NNN111]}
  - {name: platform, channel: C0PLATFORM, owners: [U0PPP111]}
models:
  - {name: recsys, team: ranking, owners: [U0AAA111]}
  - {name: summarizer, team: nlp, owners: [U0NNN111]}
chargeback:
  split: proportional
  pools: {support: evenly, idle: fixed}
  shares: {ranking: 3, nlp: 1}
"""


def pandas_sum(values: pd.Series) -> Decimal:
    """An independent sum: the file's text read as Decimal."""
    return sum((Decimal(str(v)) for v in values.dropna()), Decimal(0))


def test_real_focus_sample_charges_back_exactly_what_was_billed(session: Session) -> None:
    load_registry(session)
    frame = pd.read_csv(FOCUS, na_values=["NULL"], dtype={"BilledCost": str, "Tags": str})
    ingest(FocusSource([str(FOCUS)]), session=session)
    [result] = chargeback_report(
        session=session,
        period=month_period("2024-09"),
        policy=load_chargeback_policy(session=session),
    )
    billed = pandas_sum(frame["BilledCost"])
    brightpath = pandas_sum(
        frame.loc[frame["Tags"].str.contains('"BrightPathMatrix"', na=False), "BilledCost"]
    )
    assert result.total == billed.quantize(CENT)
    by_team = {t.team: t for t in result.teams}
    # the registry claims BrightPathMatrix for platform; nothing else has a team
    assert by_team["platform"].direct == brightpath.quantize(CENT)
    assert by_team["ranking"].direct == 0
    # proportional: the only team that spent carries all the shared cost
    assert by_team["platform"].total == result.total
    assert result.column_total("unallocated") == (billed - brightpath).quantize(CENT)


@pytest.fixture
def pooled(session: Session) -> Session:
    """The session holding `seed_pools`."""
    seed_pools(session)
    return session


def seed_pools(session: Session) -> None:
    """November with team spend, and each shared pool: unallocated, idle, support and tax."""
    load_registry(session, CHARGEBACK_REGISTRY)
    rows = [
        spend_row(DAY, "recsys", "training", "ranking", "600.006"),
        spend_row(DAY, "summarizer", "serving", "nlp", "200.001"),
        spend_row(DAY, None, "other", "platform", "200"),  # team-tagged, no model: direct
        spend_row(DAY, None, "other", None, "100.10"),  # unallocated
        {**spend_row(DAY, None, "other", None, "80", service="Kubernetes"), "attribution": "idle"},
        spend_row(DAY, None, "other", None, "29.99", service="AWS Support (Business)"),
        {**spend_row(DAY, None, "other", None, "10.01", service="Tax"), "charge_category": "Tax"},
        # December is another month
        spend_row(DAY.replace(month=12), "recsys", "training", "ranking", "999"),
    ]
    add_spend(session, rows)


def test_each_pool_is_split_by_its_method(pooled: Session) -> None:
    [result] = chargeback_report(
        session=pooled,
        period=month_period("2026-11"),
        policy=load_chargeback_policy(session=pooled),
    )
    cells = {t.team: t.cells for t in result.teams}
    assert {team: c["direct"] for team, c in cells.items()} == {
        "nlp": Decimal("200.00"),
        "platform": Decimal("200.00"),
        "ranking": Decimal("600.01"),
    }
    # unallocated and tax: proportional to 600.006 : 200.001 : 200
    assert cells["ranking"]["unallocated"] == Decimal("60.06")
    assert cells["nlp"]["unallocated"] + cells["platform"]["unallocated"] == Decimal("40.04")
    assert sum(c["tax"] for c in cells.values()) == Decimal("10.01")
    # support: evenly among the three teams that spent, 29.99 = 10.00 + 10.00 + 9.99
    assert sorted(c["support"] for c in cells.values()) == [
        Decimal("9.99"),
        Decimal("10.00"),
        Decimal("10.00"),
    ]
    # idle: fixed shares 3:1, platform declares none
    assert (cells["ranking"]["idle"], cells["nlp"]["idle"], cells["platform"]["idle"]) == (
        Decimal("60.00"),
        Decimal("20.00"),
        Decimal("0.00"),
    )
    assert result.total == Decimal("1220.11") == result.ledger_total


def run_cli(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--database-url", url, "report", "chargeback", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def pooled_url(migrated_database_url: str) -> str:
    engine = make_engine(migrated_database_url)
    with session_scope(make_session_factory(engine)) as session:
        seed_pools(session)
    engine.dispose()
    return migrated_database_url


def test_cli_csv_json_and_table_agree_and_reconcile(
    pooled_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(pooled_url, capsys, "--month", "2026-11", "--format", "csv")
    assert code == 0
    assert "\n\n" not in out  # one table a CSV reader takes as it is
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["team"] for r in rows] == ["nlp", "platform", "ranking"]
    assert sum(Decimal(r["total"]) for r in rows) == Decimal("1220.11")
    for row in rows:
        parts = ("direct", "unallocated", "idle", "support", "tax")
        assert sum(Decimal(row[p]) for p in parts) == Decimal(row["total"])
    code, out, _ = run_cli(pooled_url, capsys, "--month", "2026-11", "--format", "csv", "--totals")
    assert code == 0
    [total] = list(csv.DictReader(io.StringIO(out)))
    assert (total["month"], total["currency"], total["total"]) == ("2026-11", "USD", "1220.11")

    code, out, _ = run_cli(pooled_url, capsys, "--month", "2026-11", "--format", "json")
    [doc] = json.loads(out)
    assert doc["reconciliation"] == {
        "ledger_total": "1220.11",
        "charged_total": "1220.11",
        "difference": "0.00",
    }
    assert doc["split"] == {
        "unallocated": "proportional",
        "idle": "fixed",
        "support": "evenly",
        "tax": "proportional",
    }
    assert {t["team"]: t["total"] for t in doc["teams"]} == {r["team"]: r["total"] for r in rows}

    code, out, _ = run_cli(pooled_url, capsys, "--month", "2026-11")
    assert "reconciles: teams $1,220.11, ledger $1,220.11" in out
    assert "*" not in out and "<" not in out  # terminal text, no Slack markup


def test_bad_month_and_empty_month_say_so(
    pooled_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(pooled_url, capsys, "--month", "2026-13")
    assert code != 0 and "'2026-13' is not a month" in err and out == ""
    code, out, err = run_cli(pooled_url, capsys, "--month", "2025-01", "--format", "json")
    assert code == 0 and json.loads(out) == []
    assert "no spend in 2025-01" in err


def test_currencies_are_charged_back_separately(session: Session) -> None:
    load_registry(session, CHARGEBACK_REGISTRY)
    add_spend(
        session,
        [
            spend_row(DAY, "recsys", "training", "ranking", "100"),
            {**spend_row(DAY, "summarizer", "serving", "nlp", "50"), "currency": "EUR"},
            {**spend_row(DAY, None, "other", None, "5"), "currency": "EUR"},
        ],
    )
    results = chargeback_report(
        session=session,
        period=month_period("2026-11"),
        policy=ChargebackSpec(),
        basis=CostBasis.EFFECTIVE,
    )
    assert [(r.currency, r.total) for r in results] == [
        ("EUR", Decimal("55.00")),
        ("USD", Decimal("100.00")),
    ]


FOCUS12 = DATA / "focus12_gcp_azure_sample.csv"

GCP_AZURE_REGISTRY = """\
teams:
  - {name: ranking}
  - {name: platform}
  - {name: nlp}
models:
  - {name: recsys, team: ranking}
  - {name: search-ranker, team: ranking}
  - {name: llm-chat, team: nlp}
chargeback:
  split: evenly
  pools: {unallocated: proportional}
"""


def test_gcp_and_azure_focus12_tax_is_its_own_pool_and_the_month_reconciles(
    session: Session,
) -> None:
    load_registry(session, GCP_AZURE_REGISTRY)
    frame = pd.read_csv(FOCUS12, dtype={"BilledCost": str, "ChargeCategory": str, "Tags": str})
    ingest(FocusSource([str(FOCUS12)]), session=session)
    [result] = chargeback_report(
        session=session,
        period=month_period("2026-11"),
        policy=load_chargeback_policy(session=session),
    )
    billed = pandas_sum(frame["BilledCost"])
    tax = pandas_sum(frame.loc[frame["ChargeCategory"] == "Tax", "BilledCost"])
    assert tax > 0
    assert result.total == billed.quantize(CENT) == result.ledger_total
    assert result.column_total("tax") == tax.quantize(CENT)
    # evenly: the teams that spent each carry a third of the tax, give or take the odd cent
    shares = [t.cells["tax"] for t in result.teams if t.direct != 0]
    assert len(shares) == 3 and max(shares) - min(shares) <= CENT


def test_account_detail_rows_add_up_to_each_team_and_to_the_file(session: Session) -> None:
    load_registry(session, GCP_AZURE_REGISTRY)
    frame = pd.read_csv(FOCUS12, dtype=str)
    ingest(FocusSource([str(FOCUS12)]), session=session)
    [result] = chargeback_report(
        session=session,
        period=month_period("2026-11"),
        policy=load_chargeback_policy(session=session),
        detail="account",
    )
    columns = ("direct", "unallocated", "idle", "support", "tax")
    accounts = {row.account for row in result.accounts}
    expected_accounts = set(frame["SubAccountId"].fillna(frame["BillingAccountId"]))
    assert accounts == expected_accounts and len(accounts) == 4
    for team in result.teams:  # a team's account rows add up to its row, cell by cell
        rows = [row for row in result.accounts if row.team == team.team]
        for column in columns:
            assert sum((r.cells[column] for r in rows), Decimal(0)) == team.cells[column]
    assert sum((r.total for r in result.accounts), Decimal(0)) == result.total
    # over the teams, an account's rows are what the file billed it (each cell rounded once)
    frame["account"] = frame["SubAccountId"].fillna(frame["BillingAccountId"])
    for account in expected_accounts:
        billed = pandas_sum(frame.loc[frame["account"] == account, "BilledCost"])
        charged = sum((r.total for r in result.accounts if r.account == account), Decimal(0))
        assert abs(charged - billed) <= CENT * len(result.teams) * len(columns), account


def test_cli_detail_account_in_every_format(
    pooled_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = make_engine(pooled_url)
    with session_scope(make_session_factory(engine)) as session:
        linked = {
            **spend_row(DAY, "recsys", "training", "ranking", "5.004"),
            "sub_account": "011254002932",
        }
        add_spend(session, [linked])
    engine.dispose()
    args = ("--month", "2026-11", "--detail", "account")
    code, out, err = run_cli(pooled_url, capsys, *args, "--format", "csv")
    assert code == 0, err
    body, _blank, _total = out.partition("\n\n")
    rows = list(csv.DictReader(io.StringIO(body)))
    assert list(rows[0])[:4] == ["month", "currency", "team", "account"]
    assert {(r["team"], r["account"]) for r in rows} >= {
        ("ranking", "011254002932"),
        ("ranking", "123456789012"),
    }
    assert sum(Decimal(r["total"]) for r in rows) == Decimal("1225.11")

    code, out, _ = run_cli(pooled_url, capsys, *args, "--format", "json")
    [doc] = json.loads(out)
    assert sum(Decimal(a["total"]) for a in doc["accounts"]) == Decimal(doc["totals"]["total"])
    assert {a["account"] for a in doc["accounts"]} == {"011254002932", "123456789012"}

    code, out, _ = run_cli(pooled_url, capsys, *args)
    assert "by account" in out and "011254002932" in out

    with pytest.raises(SystemExit):
        run_cli(pooled_url, capsys, "--month", "2026-11", "--detail", "region")
    assert "invalid choice: 'region' (choose from 'account')" in capsys.readouterr().err
