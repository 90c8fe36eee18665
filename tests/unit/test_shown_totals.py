"""Rows shown with their total add up to it as shown (issue 23, item 10).

Each case rounds unluckily: rows of $100.40 (or 0.005) shown alone would sum to less than the
total shown above or below them.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

from bot.money import CostBasis
from bot.periods import month_period, trailing_days
from bot.slack.blocks.team import build_team_report_blocks
from bot.slack.blocks.waste import build_waste_blocks, build_waste_digest, render_waste_text
from bot.slack.charts.waste import WasteBar, waste_figure
from bot.spend.daily import ReportingWindow
from bot.spend.forecast import Forecast
from bot.spend.team_report import ModelLine, TeamReport
from bot.waste.checks import WasteFinding
from bot.waste.findings import ResourceEntry, WasteOverview

AS_OF = dt.date(2026, 11, 19)
NOV = month_period("2026-11")


def amounts(text: str) -> list[Decimal]:
    """Return every `$1,234.56` amount in the text, in order."""
    found = re.findall(r"\$(-?[0-9][0-9,]*(?:\.[0-9]+)?)", text)
    return [Decimal(m.replace(",", "")) for m in found]


def line(name: str, amount: str) -> ModelLine:
    return ModelLine(name, Decimal(amount), Decimal(0), Forecast(None, "not enough history", 0))


def test_the_team_reply_shows_models_that_add_up_to_its_month() -> None:
    models = [line(f"m{i}", "100.40") for i in range(3)]
    report = TeamReport(
        "ranking",
        [],
        None,
        CostBasis.BILLED,
        ReportingWindow(trailing_days(30, AS_OF), NOV, AS_OF, AS_OF),
        models,
        line("ranking", "301.20"),
        {},
    )
    _, blocks = build_team_report_blocks(report, "USD")
    ranked = next(b for b in blocks if "Models, ranked" in str(b.get("text", "")))["text"]["text"]
    shown = [amounts(row)[0] for row in ranked.splitlines()[1:]]
    assert shown and sum(shown) == Decimal(301)


def alert_of_thirds(*, days: bool) -> list[dict[str, Any]]:
    """Return the blocks of a $301.20 budget alert driven by three stages (and days) of $100.40."""
    from bot.budgets.drivers import Driver, Drivers
    from bot.budgets.evaluate import BudgetStatus
    from bot.budgets.messages import AlertContext
    from bot.budgets.plan import BudgetAlert
    from bot.periods import budget_period
    from bot.slack.blocks.alerts import build_budget_alert

    status = BudgetStatus(
        budget_id=1,
        scope="model:alpha",
        model_name="alpha",
        team_name=None,
        stage=None,
        amount=Decimal(500),
        thresholds=(50,),
        forecast_enabled=False,
        forecast_threshold=100,
        month=budget_period("monthly", AS_OF),
        as_of=AS_OF,
        month_to_date=Decimal("301.20"),
        forecast=None,
        revision=0,
        period_kind="monthly",
    )
    thirds = [Driver(name, Decimal("100.40")) for name in ("training", "serving", "storage")]
    by_day = [Driver(f"Nov {d}", Decimal("100.40")) for d in (1, 2, 3)] if days else []
    drivers = Drivers(stages=thirds, days=by_day)
    _, blocks = build_budget_alert(
        BudgetAlert(status, "actual", 50), AlertContext("C0X", drivers=drivers)
    )
    return blocks


def test_the_budget_alert_shows_stages_and_days_that_add_up_to_its_amount() -> None:
    blocks = alert_of_thirds(days=True)
    body = blocks[1]["text"]["text"]
    assert amounts(body)[0] == Decimal(301)
    stages, _resources, days = (f["text"] for f in blocks[2]["fields"])
    assert sum(amounts(stages)) == Decimal(301)
    assert sum(amounts(days)) == Decimal(301)


def thirds_of_waste() -> list[WasteFinding]:
    # three findings of $100.40 a month: shown alone $100 each under about $301
    return [
        WasteFinding("idle_endpoint", f"m{i}", Decimal("100.40"), "idle all week", "delete it")
        for i in range(3)
    ]


def test_the_waste_list_adds_up_to_its_total_as_shown() -> None:
    overview = WasteOverview(thirds_of_waste(), [], [], [], [], "USD", dt.datetime(2026, 12, 1))
    text = render_waste_text(overview)
    rows = [amounts(row)[0] for row in text.splitlines() if row.endswith(("m0", "m1", "m2"))]
    total = amounts(text.splitlines()[-1])[0]
    assert len(rows) == 3 and total == Decimal(301) and sum(rows) == total


def test_the_waste_reply_and_digest_add_up_to_their_headline() -> None:
    findings = thirds_of_waste()
    for text, blocks in (
        build_waste_blocks(findings),
        build_waste_digest(findings[:2], "the week of Nov 9–15", [], resources=[resource()]),
    ):
        headline = amounts(text)[0]
        listed = [amounts(b["text"]["text"]) for b in blocks if b["type"] == "section"]
        shown = [a for found in listed for a in found if found]
        assert headline == Decimal(301) and sum(shown) == headline, shown


def resource() -> ResourceEntry:
    return ResourceEntry(
        finding_id=7,
        kind="sagemaker_endpoint",
        resource_id="ep-1",
        account="123456789012",
        region="us-east-1",
        model=None,
        team=None,
        monthly_cost=Decimal("100.40"),
        monthly_saving=Decimal("100.40"),
        currency="USD",
        evidence="no invocations",
        fix="delete it",
        price_source="ledger",
    )


def test_the_waste_chart_labels_add_up_to_its_title() -> None:
    bars = [WasteBar("Idle endpoint", f"m{i}", Decimal("100.40")) for i in range(3)]
    figure = waste_figure(bars, currency="USD", as_of=AS_OF)
    labels = [amounts(t.get_text())[0] for t in figure.axes[0].texts]
    assert sum(labels) == amounts(figure.texts[0].get_text())[0] == Decimal(301)


def test_the_resource_scan_table_adds_up_to_its_totals_as_shown() -> None:
    from bot.cli.waste_cmd import render_table
    from bot.waste.scan.model import Recommendation, Resource, ResourceFinding
    from bot.waste.scan.run import ScanReport

    # three volumes of $0.005 a month: shown alone $0.00 (half to even) each under $0.02
    findings = tuple(
        ResourceFinding(
            Resource("ebs_volume", f"vol-{i}", "123456789012", "us-east-1"),
            "unattached",
            "attached to nothing",
            "volume state",
            Decimal("0.005"),
            "price table",
            Recommendation("delete_volume", "delete it", Decimal("0.005")),
        )
        for i in range(3)
    )
    text = render_table(ScanReport("123456789012", ("us-east-1",), findings, (), "USD"))
    rows = [amounts(row) for row in text.splitlines() if "vol-" in row]
    cost, saving = amounts(text.splitlines()[-1])
    assert cost == saving == Decimal("0.02")
    assert sum(r[0] for r in rows) == cost and sum(r[1] for r in rows) == saving


def test_the_unallocated_reply_adds_up_to_its_total_and_each_tag_to_its_services() -> None:
    from bot.slack.blocks.spend import build_unallocated_blocks
    from bot.spend.reports import SpendLine, SpendReport, SpendTotals
    from bot.spend.unallocated import UnallocatedReport

    # three tag values of three services each, $33.48 + $33.46 + $33.46 = $100.40 a tag value
    costs = [Decimal("33.48"), Decimal("33.46"), Decimal("33.46")]
    lines = [
        SpendLine({"tag": tag, "service": f"svc{i}"}, cost, Decimal(0))
        for tag in ("a", "b", "c")
        for i, cost in enumerate(costs)
    ]
    total = Decimal("301.20")
    totals = [SpendTotals("USD", total, total, total, Decimal(0), total)]
    report = SpendReport(NOV, ["tag", "service"], CostBasis.BILLED, lines, totals)
    text, blocks = build_unallocated_blocks(UnallocatedReport(report, Decimal(1000)), "USD")
    assert amounts(text)[0] == Decimal(301)
    tags = [amounts(b["text"]["text"]) for b in blocks if b["type"] == "section"]
    assert sum(found[0] for found in tags) == Decimal(301)
    assert all(sum(found[1:]) == found[0] for found in tags), tags


def test_the_reconciliation_line_reads_as_money_and_adds_up_as_shown() -> None:
    from bot.ingest.ledger import CurrencyTotals, IngestReport

    cent = Decimal("0.005")
    totals = [
        CurrencyTotals("USD", Decimal("0.015"), Decimal("0.015"), cent, cent, cent),
        CurrencyTotals("CHF", Decimal(1234), Decimal(1234), Decimal(1234), Decimal(0)),
    ]
    report = IngestReport(1, "focus", "x.csv", 3, 3, totals, 0, 0)
    assert report.reconciliation_lines() == [
        "reconciliation OK: billed $0.02 = attributed $0.01 + unallocated $0.01 + idle $0.00",
        "reconciliation OK: billed 1,234.00 CHF = attributed 1,234.00 CHF + unallocated 0.00 CHF",
    ]


def shares(text: str) -> list[int]:
    """Return every `(34 %)` share in the text, in order."""
    return [int(m) for m in re.findall(r"\((-?[0-9]+) %\)", text)]


def test_shares_shown_together_add_up_to_100_percent() -> None:
    # issue 23: three equal thirds were each shown as 33 %, 99 % in all
    from bot.money import shown_percents

    thirds = [Decimal("100.40")] * 3
    assert shown_percents(thirds, Decimal("301.20")) == [Decimal(34), Decimal(33), Decimal(33)]
    # a partial list (the top 2 of 3) is only rounded: its shares need not reach 100 %
    assert shown_percents(thirds[:2], Decimal("301.20")) == [Decimal(33), Decimal(33)]
    assert shown_percents(thirds, Decimal(0)) == [None, None, None]


def test_the_budget_alert_shows_stage_shares_that_add_up_to_100_percent() -> None:
    stages = alert_of_thirds(days=False)[2]["fields"][0]["text"]
    assert shares(stages) == [34, 33, 33]


def test_the_model_reply_shows_stage_shares_that_add_up_to_100_percent() -> None:
    from bot.slack.blocks.model import build_model_report_blocks
    from bot.spend.model_report import ModelReport

    stages = [("training", Decimal("100.40")), ("serving", Decimal("100.40"))]
    stages.append(("storage", Decimal("100.40")))
    report = ModelReport(
        model="alpha",
        team="ranking",
        owners=[],
        channel=None,
        basis=CostBasis.BILLED,
        span=ReportingWindow(trailing_days(30, AS_OF), NOV, AS_OF, AS_OF),
        daily_by_stage={},
        month_to_date=Decimal("301.20"),
        by_stage=stages,
        gpu_hours=Decimal(0),
        top_resources=[],
        forecast=Forecast(None, "not enough history", 0),
        budget=None,
        last_month_same_days=Decimal(0),
        last_month_total=Decimal(0),
    )
    _, blocks = build_model_report_blocks(report, "USD")
    lines = [row for b in blocks for row in str(b).split("\\n") if row.startswith("• ")]
    assert [s for row in lines for s in shares(row)] == [34, 33, 33], lines


def test_partial_lists_sum_what_they_leave_out_so_the_lines_add_up() -> None:
    # issue 23: "…and 1 smaller findings" (or more models, tag values, services) carried no
    # amount, so the lines shown fell short of the total shown with them
    from bot.slack.blocks.spend import MAX_GROUPS, MAX_SERVICES, build_unallocated_blocks
    from bot.slack.blocks.team import MAX_LINES
    from bot.spend.reports import SpendLine, SpendReport, SpendTotals
    from bot.spend.unallocated import UnallocatedReport

    text, blocks = build_waste_blocks(thirds_of_waste(), limit=2)
    shown = [a for b in blocks if b["type"] in ("section", "context") for a in amounts(str(b))]
    assert amounts(text)[0] == Decimal(301) and sum(shown) == Decimal(301), shown

    models = [line(f"m{i}", "100.40") for i in range(MAX_LINES + 2)]
    month = line("ranking", str(Decimal("100.40") * len(models)))
    window = ReportingWindow(trailing_days(30, AS_OF), NOV, AS_OF, AS_OF)
    report = TeamReport("ranking", [], None, CostBasis.BILLED, window, models, month, {})
    _, blocks = build_team_report_blocks(report, "USD")
    ranked = next(b for b in blocks if "Models, ranked" in str(b.get("text", "")))["text"]["text"]
    rows = ranked.splitlines()[1:]
    assert rows[-1].startswith("…and 2 more models: $")
    assert sum(amounts(row)[0] for row in rows) == Decimal(2711)  # 27 × $100.40, as shown

    tags = [f"t{i}" for i in range(MAX_GROUPS + 1)]
    services = [f"svc{i}" for i in range(MAX_SERVICES + 2)]
    lines = [
        SpendLine({"tag": tag, "service": svc}, Decimal("10.05"), Decimal(0))
        for tag in tags
        for svc in services
    ]
    total = Decimal("10.05") * len(lines)
    totals = [SpendTotals("USD", total, total, total, Decimal(0), total)]
    spend = SpendReport(NOV, ["tag", "service"], CostBasis.BILLED, lines, totals)
    text, blocks = build_unallocated_blocks(UnallocatedReport(spend, Decimal(10000)), "USD")
    sections = [amounts(b["text"]["text"]) for b in blocks if b["type"] == "section"]
    assert sum(found[0] for found in sections) == amounts(text)[0] == Decimal(784)
    assert all(sum(found[1:]) == found[0] for found in sections[:-1]), sections
    assert "…and 2 more services: $20" in str(blocks[1])
