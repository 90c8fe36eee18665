"""The demo script: every capability of mlcost, shown on the sample organisation."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from bot.alert_cycle import PlannedPost, plan_alerts
from bot.cli.context import CliContext
from bot.cli.ingest_cmd import print_report
from bot.cli.report_cmd import render
from bot.ledger import ingest
from bot.periods import month_period
from bot.registry import import_registry, load_registry_file
from bot.reports import spend_report
from bot.sources.focus import FocusSource

DATA = Path(__file__).resolve().parent / "data"
DEMO_MONTH = "2026-11"


def section(title: str) -> None:
    """Print a section heading."""
    print(f"\n== {title} " + "=" * max(0, 60 - len(title)))


def run_demo(ctx: CliContext, folder: Path) -> int:
    """Run each step of the loop and print what a user would see."""
    print(f"mlcost demo in {folder.resolve()} (database {ctx.settings.database_url})")

    section("1. Registry: teams, models, owners, budgets")
    spec = load_registry_file(DATA / "registry.yaml")
    with ctx.session() as session:
        changes = import_registry(spec, session=session, actor="demo")
    print(f"{len(spec.teams)} teams, {len(spec.models)} models, {len(spec.budgets)} budgets "
          f"({changes['created']} created, {changes['updated']} updated)")  # fmt: skip

    section("2. Ingest three months of FOCUS billing (re-ingest replaces, never doubles)")
    with ctx.session() as session:
        report = ingest(FocusSource([str(DATA / "billing-focus.csv.gz")]), session=session)
    print_report(report)

    section(f"3. Spend for {DEMO_MONTH} by model and stage")
    with ctx.session() as session:
        spend = spend_report(session=session, period=month_period(DEMO_MONTH),
                             by=["model", "stage"])  # fmt: skip
    print(render(spend, "table", ctx.settings.currency), end="")

    section(f"4. Unallocated spend in {DEMO_MONTH}: what tags would fix it")
    with ctx.session() as session:
        unowned = spend_report(session=session, period=month_period(DEMO_MONTH),
                               by=["service", "resource"], where={"model": None})  # fmt: skip
    print(render(unowned, "table", ctx.settings.currency), end="")
    show_alerts(ctx)
    return 0


ALERTS_THROUGH = dt.date(2026, 11, 20)


def show_alerts(ctx: CliContext) -> None:
    """Walk the demo month day by day and print each alert on the day it would have posted."""
    section(f"5. Budget alerts and anomalies, day by day to {ALERTS_THROUGH} (no Slack needed)")
    sent: set[str] = set()
    first: PlannedPost | None = None
    day = ALERTS_THROUGH.replace(day=1)
    while day <= ALERTS_THROUGH:
        now = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(6), dt.UTC)
        with ctx.session() as session:
            report = plan_alerts(
                session=session, settings=ctx.settings, as_of=day, now=now, also_sent=sent
            )
        for post in report.planned:
            sent.add(post.dedupe_key)
            first = first or (post if post.kind.startswith("budget") else None)
            print(f"{day:%b %d}  {post.channel:<10} {post.text}")
        day += dt.timedelta(days=1)
    if first is not None:
        print(f"\nThe first budget alert as posted in {first.channel}:")
        for block in first.blocks:
            for text in _block_texts(block):
                print("  " + text.replace("\n", "\n  "))
    print("\n`mlcost poll --as-of 2026-11-20 --dry-run` prints what would be posted on one day.")


def _block_texts(block: dict[str, Any]) -> list[str]:
    if block.get("type") == "actions":
        return ["[ " + " ] [ ".join(e["text"]["text"] for e in block["elements"]) + " ]"]
    texts = [(block.get("text") or {}).get("text", "")]
    texts += [f.get("text", "") for f in block.get("fields") or []]
    texts += [e.get("text", "") for e in block.get("elements") or []]
    return [t for t in texts if t]
