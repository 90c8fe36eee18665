"""The demo script: every capability of mlcost, shown on the sample organisation."""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from bot.bootstrap import AppServices
from bot.budgets.plan import parse_budget_alert_key
from bot.cli.ingest_cmd import print_report
from bot.cli.report_cmd import render
from bot.counts import counted
from bot.demo.opencost import show_kubernetes
from bot.demo.resource_scan import show_resource_scan
from bot.errors import IngestError
from bot.ingest.ledger import ingest
from bot.ingest.sources.base import Progress
from bot.ingest.sources.exports import RecentExportSource, recent_periods
from bot.ingest.sources.focus import FocusSource
from bot.money import format_money, format_money_places, format_percent, shown_breakdown
from bot.notify.outbox import PlannedPost
from bot.periods import (
    MONTHLY,
    day_words,
    days_words,
    month_period,
    period_kind_of_label,
    period_words,
)
from bot.poll.plan import plan_alerts
from bot.registry.spec import load_registry_file
from bot.registry.sync import import_registry
from bot.slack.mrkdwn import plain
from bot.slack.render import render as render_message
from bot.spend.reports import spend_report
from bot.waste.findings import find_configured_waste, waste_overview

DATA = Path(__file__).resolve().parent / "data"
DEMO_MONTH = "2026-11"
REPORTS_AS_OF = dt.date(2026, 11, 20)  # mid-month, so the forecasts have work to do


def section(title: str) -> None:
    """Print a section heading."""
    print(f"\n== {title} " + "=" * max(3, 60 - len(title)))  # never a trailing space


def run_demo(services: AppServices, folder: Path, progress: Progress | None = None) -> int:
    """Run each step of the loop and print what a user would see.

    The demo's database is emptied first, so every run starts from the same state and prints
    the same thing; the data every section reads (registry, billing, value metrics) is loaded
    before any section reads it. `progress` counts the steps done.
    """
    print(
        f"mlcost demo in {folder.resolve()} (database {services.settings.database_url}, "
        "emptied first: every run shows the same)"
    )
    empty_database(services)
    charts = DemoCharts(folder / "charts")
    steps: list[Callable[[], object]] = [
        lambda: show_registry(services),
        lambda: show_ingest(services, folder),
        lambda: load_value_metrics(services),
        lambda: show_spend(services),
        lambda: show_slack_model_report(services, charts),
        lambda: show_slack_team_report(services, charts),
        lambda: show_alerts(services),
        lambda: run_unit_economics_demo(services, charts),
        lambda: show_waste(services, charts),
        lambda: show_resource_scan(services, section, WASTE_AS_OF),
        lambda: show_export_poll(services, folder),
        lambda: show_trust(services),
        lambda: show_kubernetes(services, folder, section),
        lambda: show_chargeback(services),
        charts.print_list,
    ]
    if progress is not None:
        progress.set_total(len(steps), "steps")
    for step in steps:
        step()
        if progress is not None:
            progress.advance(1)
    return 0


def show_registry(services: AppServices) -> None:
    """Section 1: import the sample registry."""
    section("1. Registry: teams, models, owners, budgets")
    spec = load_registry_file(DATA / "registry.yaml")
    with services.unit_of_work() as session:
        changes = import_registry(
            spec, session=session, actor="demo", default_currency=services.settings.currency
        ).counts()
    print(
        f"{counted(len(spec.teams), 'team')}, {counted(len(spec.models), 'model')}, "
        f"{counted(len(spec.budgets), 'budget')} "
        f"({changes['created']} created, {changes['updated']} updated)"
    )


# The header and one row of Google Cloud's standard usage cost export to BigQuery, extracted
# to CSV: a native export mlcost names and points to FOCUS instead of guessing at.
GCP_STANDARD_EXPORT = (
    "billing_account_id,service.id,service.description,sku.id,sku.description,"
    "usage_start_time,usage_end_time,project.id,project.name,labels,location.region,cost,"
    "currency,currency_conversion_rate,usage.amount,usage.unit,credits,invoice.month,cost_type\n"
    "010101-F0FFF0-61C528,6F81-5844-456A,Compute Engine,2E27-4F75-95CD,"
    "Nvidia Tesla A100 GPU running in Americas,2026-11-01 00:00:00 UTC,2026-11-01 01:00:00 UTC,"
    "ml-prod,ML Prod,[],us-central1,2.934,USD,1,3600,seconds,[],202611,regular\n"
)


def show_ingest(services: AppServices, folder: Path) -> None:
    """Section 2: ingest the sample FOCUS billing, reconciled; a native export is named."""
    section("2. Ingest three months of FOCUS billing")
    with services.unit_of_work() as session:
        report = ingest(
            FocusSource([str(DATA / "billing-focus.csv.gz")]),
            session=session,
            attribution=services.settings.attribution,
        )
    print_report(report)
    native = folder / "gcp_billing_export_v1.csv"
    native.write_text(GCP_STANDARD_EXPORT)
    try:
        with services.unit_of_work() as session:
            ingest(
                FocusSource([str(native)]),
                session=session,
                attribution=services.settings.attribution,
            )
    except IngestError as refused:
        print(f"mlcost ingest focus {native.name}: refused, nothing written:")
        print(f"  {plain(str(refused)).replace(str(native), native.name)}")


def show_spend(services: AppServices) -> None:
    """Sections 4 and 5: the month's spend by model and stage, then what no model owns."""
    section(f"4. Spend for {DEMO_MONTH} by model and stage")
    with services.unit_of_work() as session:
        spend = spend_report(
            session=session, period=month_period(DEMO_MONTH), by=["model", "stage"]
        )
    print(render(spend, "table"), end="")

    section(f"5. Unallocated spend in {DEMO_MONTH}: what tags would fix it")
    with services.unit_of_work() as session:
        unowned = spend_report(
            session=session,
            period=month_period(DEMO_MONTH),
            by=["service", "resource"],
            where={"model": None},
            only_taggable=True,
        )
    print(render(unowned, "table"), end="")
    print(
        "(tax and the support plan's fee are shared costs no tag would fix: left out here, "
        "split among the teams by the chargeback in section 16)"
    )


def empty_database(services: AppServices) -> None:
    """Delete every row of the demo's database, so a run never depends on the one before."""
    from bot.db.schema import Base

    with services.unit_of_work() as session:
        for table in reversed(Base.metadata.sorted_tables):
            session.execute(table.delete())


class DemoCharts:
    """The demo's chart folder: each chart written once, listed at the end."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.written: list[tuple[str, str]] = []

    def write(self, name: str, png: bytes, what: str) -> Path:
        """Write one chart's PNG and remember what it shows."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / name
        path.write_bytes(png)
        self.written.append((name, what))
        return path

    def print_list(self) -> None:
        """Print the folder and each chart in it."""
        section("Charts")
        print(f"charts written to {self.folder.resolve()}/:")
        width = max((len(name) for name, _ in self.written), default=0)
        for name, what in self.written:
            print(f"  {name:<{width}}  {what}")


HOSTILE_TAG = "legacy <!channel> <https://evil.example|click here>"


def show_trust(services: AppServices) -> None:
    """Show what outside text becomes in Slack, and what a registry import would change."""
    section("14. Trust: outside text is escaped; a registry import shows its diff first")
    from bot.budgets.admin import parse_amount
    from bot.cli.csv_export import csv_text
    from bot.errors import UsageError
    from bot.registry.plan import plan_import
    from bot.registry.spec import parse_registry
    from bot.slack.blocks.alerts import build_unallocated_alert

    money = services.settings.currency
    line: list[tuple[str, str | None, Decimal]] = [("Amazon EC2", HOSTILE_TAG, Decimal("1234.50"))]
    _text, blocks = build_unallocated_alert(line, Decimal("1234.50"), "the week of Nov 23", money)
    shown = [t for block in blocks for t in _block_texts(block) if "legacy" in t]
    print(f"a billing tag value {HOSTILE_TAG!r} reaches Slack's mrkdwn as:")
    for text in shown:
        print("  " + text.replace("\n", "\n  "))
    print("  (escaped: it cannot ping @channel or add a link)")
    formula = '=HYPERLINK("https://evil.example","refund")'
    print(f"the tag value {formula!r} in a CSV export (report spend --format csv) is the cell:")
    print(f"  {csv_text([[formula, Decimal('-12.50')]]).strip()}")
    print("  (a spreadsheet shows it as text, never runs it; the credit stays a number)")
    try:
        parse_amount("1,5")
    except UsageError as refused:
        print("/mlcost budget set model:recsys 1,5 is refused, never read as 15:")
        print(f"  {plain(str(refused))}")
    registry = (DATA / "registry.yaml").read_text()
    raised = registry.replace('"model:recsys", monthly: 22000', '"model:recsys", monthly: 26000')
    with services.unit_of_work() as session:
        plan = plan_import(
            parse_registry(raised), session=session, source="registry.yaml", default_currency=money
        )
        print("mlcost registry import registry.yaml --dry-run, after raising recsys's budget:")
        for change in plan.diff.lines():
            print(f"  {change}")
        empty = plan_import(
            parse_registry(""), session=session, source="empty.yaml", default_currency=money
        )
        session.rollback()  # a plan changes nothing; make sure of it
    print("an empty (truncated) registry file is refused without --yes:")
    for reason in empty.refusals:
        print(f"  {reason}")


def show_chargeback(services: AppServices) -> None:
    """Section 16: the month's chargeback, shared costs split by the registry's rules."""
    from bot.cli.chargeback_cmd import render_chargeback
    from bot.spend.chargeback import chargeback_report, load_chargeback_policy

    section(f"16. Chargeback for {DEMO_MONTH} (mlcost report chargeback --month {DEMO_MONTH})")
    with services.unit_of_work() as session:
        charges = chargeback_report(
            session=session,
            period=month_period(DEMO_MONTH),
            policy=load_chargeback_policy(session=session),
        )
    print(render_chargeback(charges, "table"), end="")


def write_export_folders(root: Path) -> list[Path]:
    """Lay the demo's billing out as a FOCUS Data Export: one folder per billing period."""
    with gzip.open(DATA / "billing-focus.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        fields = list(reader.fieldnames or [])
        by_period: dict[str, list[dict[str, str]]] = {}
        for row in reader:
            by_period.setdefault(row["BillingPeriodStart"][:7], []).append(row)
    written = []
    for period, rows in sorted(by_period.items()):
        target = root / "data" / f"BILLING_PERIOD={period}" / "mlcost-focus-00001.csv.gz"
        target.parent.mkdir(parents=True, exist_ok=True)
        # mtime=0: the same rows give the same bytes on every run
        with (
            gzip.GzipFile(target, "wb", mtime=0) as raw,
            io.TextIOWrapper(raw, encoding="utf-8", newline="") as out,
        ):
            writer = csv.DictWriter(out, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
        written.append(target)
    return written


def show_export_poll(services: AppServices, folder: Path) -> None:
    """Poll an export the way the scheduler does: only the last two billing periods."""
    today = dt.date(2026, 12, 1)
    section(f"13. The scheduled poll of an export, on {today} (a folder laid out like S3)")
    root = folder / "focus-export"
    files = write_export_folders(root)
    print(
        f"{len(files)} billing-period folders under {root}/data/ "
        "(MLCOST_POLL_SOURCES=focus:s3://bucket/prefix/ reads this layout in S3)"
    )
    with services.unit_of_work() as session:
        before = spend_report(session=session, period=month_period(DEMO_MONTH), by=["model"])
    source = RecentExportSource("focus", str(root), recent_periods(today))
    with services.unit_of_work() as session:
        report = ingest(source, session=session, attribution=services.settings.attribution)
    with services.unit_of_work() as session:
        after = spend_report(session=session, period=month_period(DEMO_MONTH), by=["model"])
    print(
        f"re-read {source.location}: {report.rows_read:,} rows, replaced "
        f"{report.replaced_rows:,} ledger rows; {DEMO_MONTH} billed "
        f"{format_money_places(before.billed, services.settings.currency, 2)} before, "
        f"{format_money_places(after.billed, services.settings.currency, 2)} after (replaced, "
        "not doubled)"
    )


GATE_MODELS = ("search-ranker", "recsys", "embeddings", "churn-predictor")
REVIEW_TEAM = "ranking"
WASTE_AS_OF = dt.date(2026, 11, 30)


def load_value_metrics(services: AppServices) -> None:
    """Record the models' daily predictions: the alerts' waste posts and the economics read them."""
    from bot.economics.value_metrics import known_model_names, read_value_csv, record_values

    section("3. Value metrics: daily predictions per model")
    with services.unit_of_work() as session:
        rows = read_value_csv(DATA / "value-metrics.csv", known_model_names(session))
        record_values(rows, session=session, source="csv", recorded_by="demo")
    print(f"{len(rows):,} value rows for {len({r.model for r in rows})} models")


def run_unit_economics_demo(services: AppServices, charts: DemoCharts) -> int:
    """Unit economics and verdicts for the demo month, the review's chart, the release gate."""
    from bot.cli.review_cmd import render_economics
    from bot.economics.gate import evaluate_gate
    from bot.economics.unit_costs import month_economics
    from bot.slack.charts.review import render_review_chart

    section(f"9. Unit economics and verdicts for {DEMO_MONTH}; the monthly review")
    month = month_period(DEMO_MONTH)
    with services.unit_of_work() as session:
        economics = month_economics(
            session=session, month=month, settings=services.settings.economics
        )
    print(render_economics(economics.values(), month), end="")
    # what `mlcost review post` puts in each team's thread: one snapshot per model with cost
    snapshots = [
        e.as_json()
        for name, e in sorted(economics.items())
        if e.team == REVIEW_TEAM and e.current.cost > 0
    ]
    png = render_review_chart(month.label, REVIEW_TEAM, snapshots, services.settings.currency)
    name = f"review-{REVIEW_TEAM}-{month.label}.png"
    charts.write(name, png, f"the {month.label} review of team {REVIEW_TEAM}: cost by model, stage")
    print(
        f"\nmlcost review post asks each team to keep or kill its models, in one thread per "
        f"team with a chart; team {REVIEW_TEAM}'s: charts/{name}"
    )

    as_of = month.end - dt.timedelta(days=1)
    section(f"10. Release gate (mlcost gate <model> --as-of {as_of})")
    with services.unit_of_work() as session:
        for model in GATE_MODELS:
            result = evaluate_gate(
                session=session, model_name=model, as_of=as_of, settings=services.settings.economics
            )
            print(result.as_text())
        # ten days on with nothing ingested, the gate gives no verdict rather than a pass
        later = as_of + dt.timedelta(days=10)
        stale = evaluate_gate(
            session=session,
            model_name=GATE_MODELS[0],
            as_of=later,
            settings=services.settings.economics,
        )
    print(f"mlcost gate {GATE_MODELS[0]} --as-of {later}: nothing ingested since {as_of} (exit 3)")
    print(stale.as_text())
    return 0


def show_waste(services: AppServices, charts: DemoCharts) -> None:
    """Print the waste findings as `mlcost report waste` does, and chart them."""
    from bot.slack.blocks.waste import render_waste_text
    from bot.slack.charts.waste import WasteBar, render_waste_chart
    from bot.waste.catalog import ledger_label

    section(f"11. Waste as of {WASTE_AS_OF}: money that burns silently")
    currency = services.settings.currency
    now = dt.datetime.combine(WASTE_AS_OF + dt.timedelta(days=1), dt.time(6), dt.UTC)
    with services.unit_of_work() as session:
        findings = find_configured_waste(
            session=session, settings=services.settings.waste, as_of=WASTE_AS_OF
        )
        overview = waste_overview(
            session=session, settings=services.settings.waste, as_of=WASTE_AS_OF, now=now
        )
    print(render_waste_text(overview), end="")
    bars = [WasteBar(ledger_label(f.kind), plain(f.subject), f.monthly_cost) for f in findings]
    name = f"waste-{WASTE_AS_OF}.png"
    charts.write(
        name,
        render_waste_chart(bars, currency=currency, as_of=WASTE_AS_OF),
        "waste findings by monthly cost",
    )
    print(f"chart: charts/{name}")


def show_slack_model_report(services: AppServices, charts: DemoCharts) -> None:
    """Print what `/mlcost model recsys` posts, and write its chart PNG to the demo folder."""
    from bot.slack.blocks.common import signed_percent
    from bot.slack.charts.spend_chart import render_spend_chart
    from bot.spend.model_report import model_chart, model_report

    section(f"6. Slack: /mlcost model recsys (as of {REPORTS_AS_OF}, no Slack needed)")
    with services.unit_of_work() as session:
        report = model_report(
            session=session, name="recsys", today=REPORTS_AS_OF, currency=services.settings.currency
        )
    currency = report.currency
    money = lambda v: format_money(v, currency)  # noqa: E731
    print(
        f"month to date   {money(report.month_to_date)} "
        f"(data through {day_words(report.span.as_of, year=True)})"
    )
    print(
        f"budget          {money(report.budget or 0)} · {format_percent(report.budget_used)} used"
    )
    print(f"forecast        {report.forecast.in_words(money)}")
    print(
        f"vs last month   {signed_percent(report.change_vs_last_month)} against "
        f"{money(report.last_month_same_days)} in the same days"
    )
    print(f"GPU-hours       {report.gpu_hours:,.0f}")
    places, shown = shown_breakdown([c for _, c in report.by_stage], report.month_to_date)
    print(
        "by stage        "
        + ", ".join(
            f"{s} {format_money_places(c, currency, places)}"
            for (s, _), c in zip(report.by_stage, shown, strict=True)
        )
    )
    print(
        f"top resource    {report.top_resources[0].resource} {money(report.top_resources[0].cost)}"
        if report.top_resources
        else ""
    )
    _print_top_runs(report.top_runs, money)
    print(f"cost basis      {report.basis}")
    name = f"model-recsys-{DEMO_MONTH}.png"
    charts.write(
        name,
        render_spend_chart(model_chart(report, currency)),
        "/mlcost model recsys: daily spend by stage, burn against budget, forecast",
    )
    print(f"chart           charts/{name} (what the bot uploads to the channel)")
    show_run_costs(services)  # section 6b, in the same step


def _print_top_runs(runs: list[Any], money: Callable[[Decimal], str]) -> None:
    """Print the model report's most expensive runs, one line each."""
    for rank, run in enumerate(runs, 1):
        print(
            f"{'top runs' if rank == 1 else '':<15} {rank}. {run.run} {money(run.cost)}, "
            f"{run.gpu_hours:,.0f} GPU-h ({days_words(run.first_day, run.last_day)})"
        )


def show_run_costs(services: AppServices) -> None:
    """Section 6b: cost per training run, as `mlcost report spend --by run --model recsys`."""
    from bot.spend.runs import run_report

    section(
        f"6b. Cost per training run (mlcost report spend --by run --model recsys "
        f"--month {DEMO_MONTH})"
    )
    with services.unit_of_work() as session:
        runs = run_report(session=session, period=month_period(DEMO_MONTH), model="recsys")
    print(render(runs, "table"), end="")


def show_slack_team_report(services: AppServices, charts: DemoCharts) -> None:
    """Print the numbers `/mlcost team ranking` posts, and write its chart PNG."""
    from bot.slack.blocks.common import signed_percent
    from bot.slack.charts.spend_chart import render_spend_chart
    from bot.spend.team_report import team_chart, team_report

    section(f"7. Slack: /mlcost team {REVIEW_TEAM} (as of {REPORTS_AS_OF}, no Slack needed)")
    with services.unit_of_work() as session:
        report = team_report(
            session=session,
            name=REVIEW_TEAM,
            today=REPORTS_AS_OF,
            currency=services.settings.currency,
        )
    total, currency = report.total, report.currency
    money = lambda v: format_money(v, currency)  # noqa: E731
    print(
        f"month to date   {money(total.month_to_date)} "
        f"(data through {day_words(report.span.as_of, year=True)})"
    )
    print(f"budget          {money(total.budget or 0)} · {format_percent(total.budget_used)} used")
    print(f"forecast        {total.forecast.in_words(money)}")
    print(
        f"vs last month   {signed_percent(total.change)} against "
        f"{money(total.last_month_same_days)} in the same days"
    )
    # the models' amounts as shown add up to the month's as shown
    places, shown = shown_breakdown([m.month_to_date for m in report.models], total.month_to_date)
    for rank, (line, amount) in enumerate(zip(report.models, shown, strict=True), 1):
        print(
            f"{'models' if rank == 1 else '':<15} {rank}. {line.name} "
            f"{format_money_places(amount, currency, places)}, "
            + (
                "no forecast (not enough history)"
                if line.forecast.amount is None
                else f"forecast {money(line.forecast.amount)}"
            )
        )
    name = f"team-{REVIEW_TEAM}-{DEMO_MONTH}.png"
    charts.write(
        name,
        render_spend_chart(team_chart(report, report.currency)),
        f"/mlcost team {REVIEW_TEAM}: daily spend by model, burn against budget, forecast",
    )
    print(f"chart           charts/{name}")


ALERTS_THROUGH = REPORTS_AS_OF


def show_alerts(services: AppServices) -> None:
    """Walk the demo month day by day and print each alert on the day it would have posted."""
    section(
        f"8. Budget alerts, anomalies, weekly unallocated and waste posts, day by day to "
        f"{ALERTS_THROUGH} (no Slack needed)"
    )
    sent: set[str] = set()
    first: PlannedPost | None = None
    anomaly: PlannedPost | None = None
    per_period: list[tuple[dt.date, PlannedPost]] = []  # alerts of budgets not per month
    day = ALERTS_THROUGH.replace(day=1)
    while day <= ALERTS_THROUGH:
        now = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(6), dt.UTC)
        with services.unit_of_work() as session:
            report = plan_alerts(
                session=session,
                settings=services.settings.alerts,
                as_of=day,
                now=now,
                also_sent=sent,
            )
        for post in report.planned:
            sent.add(post.dedupe_key)
            first = first or (post if post.kind.startswith("budget") else None)
            if post.kind.startswith("budget") and _period_of_key(post.dedupe_key) != MONTHLY:
                per_period.append((day, post))
            print(
                f"{day_words(day):<6}  {post.channel:<10} {plain(render_message(post.message)[0])}"
            )
        anomaly = anomaly or answer_demo_anomaly(services, report.planned, now)
        day += dt.timedelta(days=1)
    if first is not None:
        print(f"\nThe first budget alert as posted in {first.channel} (as terminal text):")
        print_post(first)
    show_period_budget_alerts(per_period)
    if anomaly is not None:
        print(f"\nThe anomaly answered Expected, as posted in {anomaly.channel}:")
        print_post(anomaly)
    print("\nmlcost poll --as-of 2026-11-20 --dry-run prints what would be posted on one day.")


def print_post(post: PlannedPost) -> None:
    """Print a planned post's blocks as terminal text, indented."""
    for block in render_message(post.message)[1]:
        for text in _block_texts(block):
            print("  " + plain(text).replace("\n", "\n  "))


ANSWERED_MODEL = "model:recsys"
ANSWERED_BY = "U0AAA111"  # one of recsys's owners in the demo registry


def answer_demo_anomaly(
    services: AppServices, planned: list[PlannedPost], now: dt.datetime
) -> PlannedPost | None:
    """Answer recsys's first spend anomaly Expected, as its owner would the next morning."""
    from bot.anomalies.answers import answer_anomaly
    from bot.slack.blocks.alerts import answered_note_for

    post = next(
        (p for p in planned if p.dedupe_key.startswith(f"anomaly:spend:{ANSWERED_MODEL}:")), None
    )
    if post is None:
        return None
    blocks = render_message(post.message)[1]
    value = next(e["value"] for b in blocks if b["type"] == "actions" for e in b["elements"])
    amounts = json.loads(value)
    at = now + dt.timedelta(hours=3, minutes=30)
    with services.unit_of_work() as session:
        row = answer_anomaly(
            session=session,
            key=post.dedupe_key,
            answer="expected",
            user_id=ANSWERED_BY,
            amount=Decimal(amounts["amount"]),
            excess=Decimal(amounts["excess"]),
            now=at,
            basis=services.settings.budget_cost_basis,
            currency=services.settings.currency,
        ).row
        note = answered_note_for(row)
    print(f"{day_words(at.date()):<6}  {post.channel:<10} {plain(note)}")
    return post


def _period_of_key(key: str) -> str:
    """Return the kind of period (weekly, ...) a budget alert key names."""
    parsed = parse_budget_alert_key(key)
    return MONTHLY if parsed is None else period_kind_of_label(parsed[1])


def show_period_budget_alerts(alerts: list[tuple[dt.date, PlannedPost]]) -> None:
    """Print how often each budget per day, week or quarter alerted, and its first alert."""
    by_scope: dict[str, list[tuple[dt.date, str]]] = {}
    kinds: dict[str, str] = {}
    for day, post in alerts:
        parsed = parse_budget_alert_key(post.dedupe_key)
        if parsed is not None:
            by_scope.setdefault(parsed[0], []).append((day, period_words(parsed[1])))
            kinds[parsed[0]] = period_kind_of_label(parsed[1])
    for scope, posted in by_scope.items():
        when = ", ".join(f"{day_words(day)} ({words})" for day, words in posted)
        times = "once" if len(posted) == 1 else f"{len(posted)} times"
        print(
            f"\n{scope} has a {kinds[scope]} budget: it alerted {times} in the walk, on "
            f"{when}; each threshold alerts once per period."
        )
    if alerts:
        day, post = alerts[0]
        print(f"It was posted in {post.channel} as:")
        print_post(post)


def _block_texts(block: dict[str, Any]) -> list[str]:
    if block.get("type") == "actions":
        return ["[ " + " ] [ ".join(e["text"]["text"] for e in block["elements"]) + " ]"]
    texts = [(block.get("text") or {}).get("text", "")]
    texts += [f.get("text", "") for f in block.get("fields") or []]
    texts += [e.get("text", "") for e in block.get("elements") or []]
    return [t for t in texts if t]
