"""Currency: each ledger row keeps its billing currency; amounts in different ones never add up."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from bot.anomalies.detect import find_anomalies
from bot.budgets.board import budget_board
from bot.budgets.evaluate import evaluate_budgets
from bot.cli import main
from bot.cli.report_cmd import render
from bot.config import Settings
from bot.db.schema import Budget, DailySpend, IngestionRun
from bot.economics.gate import _over_budget_check as over_budget_check
from bot.economics.gate import evaluate_gate
from bot.economics.unit_costs import economics_for
from bot.errors import CurrencyError, IngestError, RegistryError
from bot.ingest.ledger import IngestReport, ingest
from bot.ingest.sources.athena import _to_table as athena_table
from bot.ingest.sources.athena import build_query
from bot.ingest.sources.cost_explorer import CostExplorerSource
from bot.ingest.sources.cur import CurSource
from bot.ingest.sources.focus import FocusSource
from bot.notify.routing import Router
from bot.periods import month_period
from bot.poll.plan import plan_alerts, plan_unallocated_post
from bot.registry.spec import parse_registry
from bot.registry.sync import export_registry
from bot.slack.blocks.budget import build_budget_show_blocks
from bot.spend.reports import spend_report
from bot.waste.findings import find_configured_waste
from tests.conftest import DATA
from tests.support.alert_walk import add_spend, spend_row
from tests.support.ledger import assert_rollup_matches_ledger
from tests.support.outbox import rendered
from tests.support.sample_registry import REGISTRY, load_registry

HEADER = (
    "BillingAccountId,ProviderName,ChargePeriodStart,BillingPeriodStart,ServiceName,"
    "BilledCost,EffectiveCost,BillingCurrency,Tags\n"
)


def ingest_focus_rows(
    tmp_path: Path,
    session: Session,
    rows: list[tuple[str, str, str, str, str]],
    name: str,
    **source_options: Any,
) -> IngestReport:
    """Write and ingest a small FOCUS file: (account, day, cost, currency, model tag) per row."""
    path = tmp_path / name
    lines = [
        f"{account},AWS,{day} 00:00:00,{day[:8]}01 00:00:00,Amazon SageMaker,{cost},{cost},"
        f'{currency},"{{""ml:model"": ""{model}""}}"\n'
        for account, day, cost, currency, model in rows
    ]
    path.write_text(HEADER + "".join(lines))
    return ingest(FocusSource([str(path)], **source_options), session=session)


@pytest.fixture
def mixed(tmp_path: Path, session: Session) -> Path:
    """One USD account and one EUR account, both spending on recsys in November 2026."""
    load_registry(session)
    ingest_focus_rows(
        tmp_path,
        session,
        [
            ("111", "2026-11-02", "100.00", "USD", "recsys"),
            ("111", "2026-11-03", "10.00", "USD", "nobody"),
            ("222", "2026-11-02", "120.00", "EUR", "recsys"),
            ("222", "2026-11-03", "5.00", "EUR", "nobody"),
        ],
        "mixed.csv",
    )
    session.flush()
    return tmp_path / "mixed.csv"


def test_ledger_rows_keep_their_billing_currency(session: Session, mixed: Path) -> None:
    rows = session.execute(
        select(DailySpend.billing_account, DailySpend.currency, DailySpend.billed_cost)
    ).all()
    assert sorted((a, c, Decimal(v)) for a, c, v in rows) == [
        ("111", "USD", Decimal("10.00")),
        ("111", "USD", Decimal("100.00")),
        ("222", "EUR", Decimal("5.00")),
        ("222", "EUR", Decimal("120.00")),
    ]
    assert_rollup_matches_ledger(session)


def test_reconciliation_is_one_line_per_currency(tmp_path: Path, session: Session) -> None:
    load_registry(session)
    report = ingest_focus_rows(
        tmp_path,
        session,
        [
            ("111", "2026-11-02", "100.00", "USD", "recsys"),
            ("222", "2026-11-02", "120.00", "EUR", "nobody"),
        ],
        "mixed.csv",
    )
    assert report.reconciled
    assert report.reconciliation_lines() == [
        "reconciliation OK: billed €120.00 = attributed €0.00 + unallocated €120.00",
        "reconciliation OK: billed $100.00 = attributed $100.00 + unallocated $0.00",
    ]
    run = session.get(IngestionRun, report.run_id)
    assert run is not None and run.currency_totals is not None
    assert run.currency_totals["EUR"]["unallocated"] == str(Decimal("120.0000000000"))
    assert run.billed_total == 0  # no single total for a run billed in two currencies
    with pytest.raises(ValueError, match="billed in EUR, USD"):
        _ = report.billed_total


def test_a_bad_currency_code_is_refused(tmp_path: Path, session: Session) -> None:
    load_registry(session)
    bad = [("111", "2026-11-02", "1.00", "US Dollar", "recsys")]
    with pytest.raises(IngestError, match=r"BillingCurrency.*'US Dollar'.*ISO 4217"):
        ingest_focus_rows(tmp_path, session, bad, "bad.csv")


def test_a_missing_currency_takes_the_default_and_says_so(tmp_path: Path, session: Session) -> None:
    load_registry(session)
    blank = [("111", "2026-11-02", "1.00", "", "recsys")]
    report = ingest_focus_rows(tmp_path, session, blank, "blank.csv", default_currency="EUR")
    assert session.scalars(select(DailySpend.currency)).all() == ["EUR"]
    assert any("1 row had no BillingCurrency" in n and "EUR" in n for n in report.notes)


def test_the_real_focus_sample_is_all_usd(session: Session) -> None:
    load_registry(session)
    report = ingest(FocusSource([str(DATA / "focus_sample.csv")]), session=session)
    assert set(session.scalars(select(DailySpend.currency))) == {"USD"}
    assert [line.split(":")[0] for line in report.reconciliation_lines()] == ["reconciliation OK"]


def test_the_spend_table_never_adds_dollars_and_euros(session: Session, mixed: Path) -> None:
    report = spend_report(session=session, period=month_period("2026-11"), by=["model"])
    table = render(report, "table")
    assert "235" not in table and "220" not in table
    assert "$110" in table and "€125" in table


def test_spend_report_groups_by_currency_and_never_adds_them(session: Session, mixed: Path) -> None:
    report = spend_report(session=session, period=month_period("2026-11"), by=["model"])
    lines = {(line.group["model"], line.currency): line.cost for line in report.lines}
    assert lines == {
        ("recsys", "USD"): Decimal("100.00"),
        ("recsys", "EUR"): Decimal("120.00"),
        (None, "USD"): Decimal("10.00"),
        (None, "EUR"): Decimal("5.00"),
    }
    totals = {t.currency: t for t in report.totals}
    assert totals["USD"].billed == Decimal("110.00") and totals["EUR"].billed == Decimal("125.00")
    for total in report.totals:
        assert total.attributed + total.unallocated == total.billed

    data = json.loads(render(report, "json"))
    assert {(r["model"], r["currency"], r["cost"]) for r in data["rows"]} == {
        ("recsys", "USD", "100.0000000000"),
        ("recsys", "EUR", "120.0000000000"),
        (None, "USD", "10.0000000000"),
        (None, "EUR", "5.0000000000"),
    }
    assert {t["currency"]: t["billed"] for t in data["totals"]} == {
        "USD": "110.0000000000",
        "EUR": "125.0000000000",
    }

    table = render(report, "table")
    assert "$110" in table and "€125" in table
    assert "235" not in table  # never one sum of dollars and euros
    csv_text = render(report, "csv")
    assert "235" not in csv_text and "EUR" in csv_text


def test_a_budget_counts_only_spend_in_its_currency(session: Session, mixed: Path) -> None:
    statuses = {s.scope: s for s in evaluate_budgets(session=session, as_of=dt.date(2026, 11, 3))}
    recsys = statuses["model:recsys"]
    assert recsys.month_to_date == Decimal("100.00")  # not 220: euros are not dollars
    assert recsys.currency == "USD"


def test_a_budgets_forecast_learns_from_spend_in_its_currency_only(
    tmp_path: Path, session: Session
) -> None:
    # budgets in one currency: the history's day buckets no longer name the currency (issue 24),
    # so euros of the same model must still stay out of the dollar budget's run-rate and pattern
    load_registry(session)
    days = [dt.date(2026, 11, 1) + dt.timedelta(days=i) for i in range(20)]
    rows = [("111", f"{day}", "100.00", "USD", "recsys") for day in days]
    rows += [("222", f"{day}", "1000.00", "EUR", "recsys") for day in days]
    ingest_focus_rows(tmp_path, session, rows, "twenty-days.csv")
    session.flush()
    statuses = {s.scope: s for s in evaluate_budgets(session=session, as_of=days[-1])}
    recsys = statuses["model:recsys"]
    assert recsys.month_to_date == Decimal("2000.00")
    assert recsys.forecast is not None
    assert recsys.forecast.amount == Decimal("3000.00")  # $100 a day for the ten days left


def test_budget_show_reports_spend_in_other_currencies_as_not_counted(
    session: Session, mixed: Path
) -> None:
    board = budget_board(session=session, today=dt.date(2026, 11, 3), scope="model:recsys")
    status = board.statuses[0]
    assert status.spent == Decimal("100.00")  # the USD budget counts the USD spend only
    assert status.currency == "USD"
    assert status.not_counted == {"EUR": Decimal("120.00")}
    text, blocks = build_budget_show_blocks(status, board, "USD")
    shown = json.dumps(blocks, ensure_ascii=False)
    assert "not counted: €120 (billed in another currency)" in shown and "220" not in shown + text


def test_a_euro_budget_from_the_registry_counts_euros(session: Session, mixed: Path) -> None:
    load_registry(
        session,
        REGISTRY.replace(
            '- {scope: "model:recsys", monthly: 12000,',
            '- {scope: "model:recsys", monthly: 150, currency: EUR,',
        ),
    )
    [recsys] = [s for s in evaluate_budgets(session=session, as_of=dt.date(2026, 11, 3))]
    assert (recsys.currency, recsys.month_to_date) == ("EUR", Decimal("120.00"))
    assert recsys.reached(80) and not recsys.reached(100)
    exported = export_registry(session=session).budgets[0]
    assert exported.currency == "EUR"


def test_a_registry_budget_with_a_bad_currency_is_refused() -> None:
    with pytest.raises(RegistryError, match="ISO 4217"):
        parse_registry(REGISTRY.replace("forecast: true}", "forecast: true, currency: euro}"))


def test_the_gate_compares_a_budget_with_spend_in_its_currency(
    session: Session, mixed: Path
) -> None:
    session.execute(update(Budget).values(monthly_amount=Decimal(150)))
    budgets = session.scalars(select(Budget)).all()
    over = over_budget_check(session, budgets, dt.date(2026, 11, 3))
    assert over.passed, over.detail  # 100 USD of 150 USD; the 120 EUR are not dollars
    # the gate as a whole cannot judge recsys's unit cost in two currencies: it says so
    with pytest.raises(CurrencyError, match="unit economics need one currency"):
        evaluate_gate(
            session=session, settings=Settings(), model_name="recsys", as_of=dt.date(2026, 11, 3)
        )


def test_report_refuses_a_currency_setting_the_ledger_contradicts(
    database_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = ["--database-url", database_url]
    assert main([*db, "ingest", "focus", str(DATA / "focus_sample.csv")]) == 0
    monkeypatch.setenv("MLCOST_CURRENCY", "EUR")
    capsys.readouterr()
    code = main([*db, "report", "spend", "--month", "2024-09"])
    out, err = capsys.readouterr()
    assert code == 2 and "€" not in out  # not relabelled as euros
    assert "MLCOST_CURRENCY is EUR, but the ledger holds spend billed in USD only" in err
    monkeypatch.setenv("MLCOST_CURRENCY", "USD")
    assert main([*db, "report", "spend", "--month", "2024-09"]) == 0
    assert "$20.52" in capsys.readouterr().out


def test_the_poll_refuses_a_currency_setting_the_ledger_contradicts(
    session: Session, mixed: Path
) -> None:
    now = dt.datetime(2026, 11, 4, 12, tzinfo=dt.UTC)
    with pytest.raises(CurrencyError, match=r"MLCOST_CURRENCY is GBP.*EUR and USD"):
        plan_alerts(
            session=session,
            settings=Settings(MLCOST_CURRENCY="GBP"),
            as_of=dt.date(2026, 11, 3),
            now=now,
        )
    # one of the ledger's currencies is a valid organisation currency
    plan_alerts(
        session=session,
        settings=Settings(MLCOST_CURRENCY="EUR"),
        as_of=dt.date(2026, 11, 3),
        now=now,
    )


def test_one_currency_views_show_the_ledgers_currency_or_refuse_a_mix(
    session: Session, mixed: Path
) -> None:
    from bot.spend.reports import display_currency

    window = month_period("2026-11")
    usd_only = [DailySpend.billing_account == "111"]
    assert (
        display_currency(session, setting="EUR", period=window, where=usd_only, what="x") == "USD"
    )
    mix = r"`recsys`'s spend in 2026-11 is billed in EUR and USD"
    with pytest.raises(CurrencyError, match=mix):
        display_currency(
            session,
            setting="USD",
            period=window,
            where=[DailySpend.model == "recsys"],
            what="`recsys`'s spend",
        )
    assert (
        display_currency(session, setting="EUR", period=month_period("2026-09"), what="x") == "EUR"
    )


def test_cost_explorer_rows_take_the_currency_of_their_cost_metric(session: Session) -> None:
    load_registry(session)
    response = json.loads((DATA / "get-cost-and-usage.output.json").read_text())
    groups = [g for r in response["ResultsByTime"] for g in r["Groups"]]
    for metric in groups[0]["Metrics"].values():
        if metric["Unit"] == "USD":
            metric["Unit"] = "EUR"  # an account that Cost Explorer reports in euros
    client = boto3.client("ce", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_response("get_cost_and_usage", response)
        report = ingest(
            CostExplorerSource(
                client, dt.date(2017, 9, 1), dt.date(2017, 10, 1), model_tag_key="Environment"
            ),
            session=session,
        )
    assert report.currencies == ["EUR", "USD"]
    euros = Decimal(groups[0]["Metrics"]["UnblendedCost"]["Amount"])
    assert {t.currency: t.billed for t in report.totals}["EUR"] == euros
    assert set(session.scalars(select(DailySpend.currency))) == {"EUR", "USD"}
    assert_rollup_matches_ledger(session)


def test_cur_lines_keep_line_item_currency_code(tmp_path: Path, session: Session) -> None:
    load_registry(session)
    path = tmp_path / "cur.csv"
    path.write_text(
        "bill/PayerAccountId,lineItem/UsageStartDate,bill/BillingPeriodStartDate,"
        "lineItem/ProductCode,lineItem/UnblendedCost,lineItem/CurrencyCode,pricing/currency\n"
        "111,2026-11-02T00:00:00Z,2026-11-01T00:00:00Z,AmazonEC2,10.5,EUR,USD\n"
        "111,2026-11-02T00:00:00Z,2026-11-01T00:00:00Z,AmazonS3,2.25,,USD\n"
    )
    report = ingest(CurSource([str(path)], default_currency="EUR"), session=session)
    assert report.currencies == ["EUR"]  # the bill's currency, not the price list's
    assert report.billed_total == Decimal("12.75")
    assert any("no line_item_currency_code; counted in EUR" in n for n in report.notes)


def test_the_real_cur_months_are_usd(session: Session) -> None:
    load_registry(session)
    month = DATA / "Dec2018-WorkshopCUR-00001.snappy.parquet"
    report = ingest(CurSource([str(month)]), session=session)
    assert report.currencies == ["USD"] and report.reconciled and not report.notes


def test_athena_reads_the_cur_currency_column() -> None:
    sql = build_query("cur", "cur_table", "2026-11", {})
    assert "coalesce(line_item_currency_code, '') AS currency" in sql
    table = athena_table(
        ["day", "billing_period", "billing_account", "service", "currency", "billed"],
        [["2026-11-01", "2026-11-01", "111", "Amazon SageMaker", "GBP", "5"]],
    )
    assert table["currency"].to_pylist() == ["GBP"]


def test_the_weekly_unallocated_alert_is_one_post_per_currency(session: Session) -> None:
    load_registry(session)
    week = [dt.date(2026, 11, 2) + dt.timedelta(days=i) for i in range(7)]  # Mon..Sun
    rows = [spend_row(day, None, "other", None, "30") for day in week]  # $210
    rows += [{**spend_row(day, None, "other", None, "20"), "currency": "EUR"} for day in week]
    add_spend(session, rows)  # €140
    posts, _ = plan_unallocated_post(
        session=session, settings=Settings(), as_of=dt.date(2026, 11, 9), router=Router(session)
    )
    headlines = sorted((p.dedupe_key, rendered(p)[0]) for p in posts)
    assert headlines == [
        ("unallocated:2026-11-02", ":mag: $210 of spend had no owner in the week of Nov 2–8"),
        (
            "unallocated:2026-11-02:EUR",
            ":mag: €140 of spend had no owner in the week of Nov 2–8",
        ),
    ]


def test_unit_economics_refuse_a_model_billed_in_two_currencies(
    tmp_path: Path, session: Session, mixed: Path
) -> None:
    november, october = month_period("2026-11"), month_period("2026-10")
    with pytest.raises(CurrencyError, match=r"`recsys`'s spend .* is billed in EUR and USD"):
        economics_for(session=session, period=november, previous=october, models=["recsys"])
    usd = economics_for(session=session, period=november, previous=october, models=["prod"])
    assert usd == {}  # a model with no spend is fine


def test_one_model_in_two_currencies_leaves_the_others_economics_and_review(
    tmp_path: Path, session: Session, mixed: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A monthly review or sign-off for everyone must not stop because one model is mixed."""
    ingest_focus_rows(
        tmp_path, session, [("333", "2026-11-02", "70.00", "USD", "brightpath")], "bp.csv"
    )
    session.flush()
    november, october = month_period("2026-11"), month_period("2026-10")
    everyone = economics_for(session=session, period=november, previous=october)
    assert sorted(everyone) == ["brightpath"]
    assert everyone["brightpath"].current.cost == Decimal("70.00")
    assert "recsys" in caplog.text and "EUR and USD" in caplog.text


def test_waste_findings_never_add_currencies(session: Session) -> None:
    load_registry(session)
    week = [dt.date(2026, 11, 2) + dt.timedelta(days=i) for i in range(7)]
    ghost = [
        {**spend_row(day, None, "other", None, "100"), "model_tag_value": "ghost"} for day in week
    ]
    add_spend(session, ghost + [{**row, "currency": "EUR"} for row in ghost])
    findings = find_configured_waste(session=session, settings=Settings(), as_of=week[-1])
    [orphaned] = [f for f in findings if f.kind == "orphaned"]
    assert orphaned.monthly_cost == Decimal(3000)  # $100 a day; the €100 a day is not dollars


def test_anomalies_compare_spend_in_the_organisations_currency_only(session: Session) -> None:
    load_registry(session)
    day = dt.date(2026, 11, 30)
    rows = []
    for back in range(29):
        when = day - dt.timedelta(days=back)
        rows.append(spend_row(when, "recsys", "serving", "ranking", "1000" if back == 0 else "100"))
        rows.append(
            {
                **spend_row(when, "recsys", "serving", "ranking", "500"),
                "currency": "EUR",
                "resource_id": "eu-endpoint",
            }
        )
    add_spend(session, rows)
    found = find_anomalies(session=session, day=day, min_excess=Decimal(100), currency="USD")
    [spike] = [a for a in found if a.scope == "model:recsys"]
    assert (spike.value, spike.baseline.median) == (Decimal(1000), Decimal(100))  # not 1500/600
