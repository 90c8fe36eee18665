"""The demo script: every capability of mlcost, shown on the sample organisation."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from bot.blocks.waste import render_waste_text
from bot.cli.context import CliContext
from bot.cli.ingest_cmd import print_report
from bot.cli.report_cmd import render
from bot.ledger import ingest
from bot.periods import month_period
from bot.registry import import_registry, load_registry_file
from bot.reports import spend_report
from bot.sources.focus import FocusSource
from bot.waste import find_waste

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

    section("Waste as of 2026-11-30: money that burns silently")
    with ctx.session() as session:
        findings = find_waste(session=session, as_of=dt.date(2026, 11, 30))
    print(render_waste_text(findings, ctx.settings.currency), end="")
    return 0
