"""`report spend --by account`: usage accounts (linked account, project, subscription)."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from decimal import Decimal

import pandas as pd
import pytest
from sqlalchemy.orm import Session

from bot.cli import main
from bot.errors import UsageError
from bot.ingest.ledger import ingest
from bot.ingest.sources.cur import CurSource
from bot.ingest.sources.focus import FocusSource
from bot.periods import month_period
from bot.spend.reports import parse_dimensions, spend_report
from tests.conftest import DATA
from tests.support.sample_registry import load_registry

FOCUS = DATA / "focus_sample.csv"
FOCUS12 = DATA / "focus12_gcp_azure_sample.csv"
CUR_MONTHS = sorted(DATA.glob("*2018-WorkshopCUR-00001.snappy.parquet"))
CENT = Decimal("0.01")
PAYER = "836060457634"
LINKED = "011254002932"  # a leading zero: an account id is text, never a number


def cur_by_month_and_account() -> dict[str, dict[str, Decimal]]:
    """The CUR files' unblended cost per usage month and usage account, summed independently."""
    columns = [
        "line_item_usage_start_date",
        "line_item_usage_account_id",
        "line_item_unblended_cost",
    ]
    sums: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for path in CUR_MONTHS:
        frame = pd.read_parquet(path, columns=columns).dropna(subset=[columns[2]])
        months = frame[columns[0]].dt.strftime("%Y-%m")
        for month, account, cost in zip(months, frame[columns[1]], frame[columns[2]], strict=True):
            sums[month][account] += Decimal(repr(float(cost)))
    return sums


def focus_by_account(path: str, month: str) -> dict[str, Decimal]:
    """A FOCUS file's BilledCost per SubAccountId (the billing account where it has none)."""
    frame = pd.read_csv(path, dtype=str, na_values=["NULL"], keep_default_na=True)
    frame = frame[frame["ChargePeriodStart"].str.startswith(month)]
    account = frame["SubAccountId"].fillna(frame["BillingAccountId"])
    sums: dict[str, Decimal] = defaultdict(Decimal)
    for key, cost in zip(account, frame["BilledCost"], strict=True):
        if isinstance(cost, str):
            sums[key] += Decimal(cost)
    return dict(sums)


def report_by_account(session: Session, month: str, by: str = "account") -> dict[str, Decimal]:
    report = spend_report(session=session, period=month_period(month), by=parse_dimensions(by))
    found: dict[str, Decimal] = defaultdict(Decimal)
    for line in report.lines:
        found[line.group["account"]] += line.cost
    assert sum(found.values(), Decimal(0)) == report.total  # rows add up to the billed total
    return dict(found)


def test_cur_linked_accounts_are_each_a_line_equal_to_pandas(session: Session) -> None:
    load_registry(session)
    ingest(CurSource([str(p) for p in CUR_MONTHS]), session=session)
    expected = cur_by_month_and_account()
    assert sorted(expected) == ["2018-10", "2018-11", "2018-12"]
    for month, accounts in expected.items():
        assert set(accounts) == {PAYER, LINKED}
        found = report_by_account(session, month)
        assert set(found) == {PAYER, LINKED}, month
        for account, cost in accounts.items():
            assert found[account].quantize(CENT) == cost.quantize(CENT), (month, account)
        # the payer, as a dimension of its own, is one line holding both accounts' spend
        payer = report_by_account_payer(session, month)
        assert payer.keys() == {PAYER}
        assert payer[PAYER] == sum(found.values(), Decimal(0))


def report_by_account_payer(session: Session, month: str) -> dict[str, Decimal]:
    report = spend_report(
        session=session, period=month_period(month), by=parse_dimensions("billing_account")
    )
    return {line.group["billing_account"]: line.cost for line in report.lines}


@pytest.mark.parametrize("path", [FOCUS, FOCUS12], ids=["focus-1.0", "focus-1.2"])
def test_focus_sub_accounts_are_each_a_line_equal_to_pandas(session: Session, path: object) -> None:
    load_registry(session)
    ingest(FocusSource([str(path)]), session=session)
    month = "2024-09" if path == FOCUS else "2026-11"
    expected = focus_by_account(str(path), month)
    assert len(expected) > 3
    found = report_by_account(session, month)
    assert found.keys() == expected.keys()
    for account, cost in expected.items():
        assert found[account].quantize(CENT) == cost.quantize(CENT), account


def test_account_with_model_keeps_unallocated_lines_per_account(session: Session) -> None:
    load_registry(session)
    ingest(FocusSource([str(FOCUS)]), session=session)
    report = spend_report(
        session=session, period=month_period("2024-09"), by=parse_dimensions("account,model")
    )
    unallocated = [line for line in report.lines if line.group["model"] is None]
    claimed = [line for line in report.lines if line.group["model"] is not None]
    assert unallocated and claimed
    assert sum((line.cost for line in claimed), Decimal(0)) == report.attributed
    assert sum((line.cost for line in unallocated), Decimal(0)) == report.unallocated


def test_unknown_dimension_lists_account_and_billing_account() -> None:
    with pytest.raises(UsageError, match=r"account.*billing_account"):
        parse_dimensions("acount")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_by_account_table_csv_json_reconcile_with_the_file(
    migrated_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--database-url", migrated_database_url]
    assert cli(capsys, *db, "ingest", "focus", str(FOCUS12))[0] == 0
    expected = focus_by_account(str(FOCUS12), "2026-11")
    billed = sum(expected.values(), Decimal(0))
    spend = [*db, "report", "spend", "--month", "2026-11", "--by", "account"]

    code, out, err = cli(capsys, *spend, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    rows = {row["account"]: Decimal(row["cost"]) for row in doc["rows"]}
    assert rows.keys() == expected.keys()
    assert all(rows[k].quantize(CENT) == v.quantize(CENT) for k, v in expected.items())
    [totals] = doc["totals"]
    assert sum(rows.values(), Decimal(0)) == Decimal(totals["billed"])
    assert Decimal(totals["billed"]).quantize(CENT) == billed.quantize(CENT)

    code, out, _ = cli(capsys, *spend, "--format", "csv")
    lines = list(csv.DictReader(io.StringIO(out)))
    assert list(lines[0]) == ["account", "currency", "cost", "gpu_hours"]
    assert {r["account"]: Decimal(r["cost"]) for r in lines} == rows
    code, out, _ = cli(capsys, *spend, "--format", "csv", "--totals")
    [total] = list(csv.DictReader(io.StringIO(out)))
    assert Decimal(total["billed"]) == Decimal(totals["billed"])

    code, out, _ = cli(capsys, *spend)
    assert "/subscriptions/3f9c2a1e-7b44-4d7e-9a51-2c8e1d0f6a42" in out
    assert "recsys-train-318204" in out and "llm-research-552190" in out


ACCOUNT_REGISTRY = """\
teams:
  - {name: ranking}
  - {name: research}
models:
  - {name: workshop, team: ranking, match: {accounts: "LINKED"}}
attribution:
  account_teams: {"llm-research-552190": research}
""".replace("LINKED", LINKED)


def test_a_linked_account_rule_claims_that_accounts_spend_after_re_ingesting(
    session: Session,
) -> None:
    load_registry(session, ACCOUNT_REGISTRY.replace(LINKED, "000000000000"))
    october = str(DATA / "Oct2018-WorkshopCUR-00001.snappy.parquet")
    ingest(CurSource([october]), session=session)
    month = "2018-10"
    before = spend_report(session=session, period=month_period(month), by=["model"])
    assert [line.group["model"] for line in before.lines] == [None]

    load_registry(session, ACCOUNT_REGISTRY)  # the rule changes; re-ingesting applies it
    ingest(CurSource([october]), session=session)
    after = spend_report(session=session, period=month_period(month), by=["account", "model"])
    found = {(line.group["account"], line.group["model"]): line.cost for line in after.lines}
    expected = cur_by_month_and_account()[month]
    assert found.keys() == {(LINKED, "workshop"), (PAYER, None)}
    assert found[LINKED, "workshop"].quantize(CENT) == expected[LINKED].quantize(CENT)
    assert after.attributed == found[LINKED, "workshop"]
    assert after.total == before.total


def test_a_project_given_to_a_team_is_that_teams_spend(session: Session) -> None:
    load_registry(session, ACCOUNT_REGISTRY)
    ingest(FocusSource([str(FOCUS12)]), session=session)
    report = spend_report(session=session, period=month_period("2026-11"), by=["account", "team"])
    teams = {
        line.group["team"]
        for line in report.lines
        if line.group["account"] == "llm-research-552190"
    }
    assert teams == {"research"}
    expected = focus_by_account(str(FOCUS12), "2026-11")["llm-research-552190"]
    research = sum(
        (line.cost for line in report.lines if line.group["team"] == "research"), Decimal(0)
    )
    assert research.quantize(CENT) == expected.quantize(CENT)
