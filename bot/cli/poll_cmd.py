"""`mlcost poll [--as-of YYYY-MM-DD] [--dry-run]`: one poll-and-alert cycle now."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from bot.cli import progress
from bot.cli.arguments import day_argument
from bot.cli.ingest_cmd import print_report
from bot.cli.terminal import NOT_DELIVERED, terminal_text
from bot.counts import counted
from bot.errors import UsageError

if TYPE_CHECKING:
    from bot.cli.context import CliContext
    from bot.poll.plan import CycleReport

# bot.poll.plan.ALL_CHECKS, spelled here so `--help` need not import the planner (which loads
# SQLAlchemy and pyarrow); tests/cli/test_help_imports.py checks the two agree
CHECKS = ("budgets", "anomalies", "unallocated", "waste")


def register(commands: Any) -> None:
    poll = commands.add_parser(
        "poll", help="one poll-and-alert cycle now (re-read sources, evaluate, post once)"
    )
    poll.add_argument(
        "--as-of",
        type=day_argument,
        metavar="YYYY-MM-DD",
        help="evaluate as of this day, from the ledger only (default: yesterday, after polling)",
    )
    poll.add_argument(
        "--dry-run", action="store_true", help="print what would be posted; change nothing"
    )
    poll.add_argument("--no-fetch", action="store_true", help="do not poll MLCOST_POLL_SOURCES")
    poll.add_argument(
        "--only", help=f"comma-separated checks to run (default all: {','.join(CHECKS)})"
    )
    poll.set_defaults(handler=run)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run one cycle and print what it fetched, planned and delivered."""
    from bot.periods import local_today
    from bot.poll.cycle import run_cycle
    from bot.poll.jobs import poll_sources
    from bot.poll.plan import ALL_CHECKS

    checks = ALL_CHECKS
    if args.only:
        checks = tuple(c.strip() for c in args.only.split(",") if c.strip())
        unknown = [c for c in checks if c not in ALL_CHECKS]
        if unknown:
            raise UsageError(f"--only: unknown check {unknown[0]!r}; use {', '.join(ALL_CHECKS)}")
    services = ctx.services
    now = services.clock()
    fetch = not (args.as_of or args.no_fetch or args.dry_run)
    today = local_today(now, services.settings.timezone)
    sources = []
    if fetch:
        sources = poll_sources(
            session_factory=services.session_factory,
            settings=services.settings.poll,
            attribution=services.settings.attribution,
            aws=services.aws,
            today=today,
        )
    delivering = not args.dry_run and services.settings.slack_bot_token is not None
    report = run_cycle(
        session_factory=services.session_factory,
        settings=services.settings.poll,
        now=now,
        as_of=args.as_of,
        sources=sources,
        edge=services.delivery_edge if delivering else None,
        checks=checks,
        dry_run=args.dry_run,
        progress=progress.task,
    )
    print_cycle(report, dry_run=args.dry_run, delivering=delivering)
    return 1 if report.fetch_errors else 0


def print_cycle(report: CycleReport, *, dry_run: bool, delivering: bool) -> None:
    """Print one cycle's outcome."""
    from bot.slack.mrkdwn import plain
    from bot.slack.render import render

    for fetched in report.fetched:
        print_report(fetched)
    for error in report.fetch_errors:
        print(f"error: {terminal_text(error)}")
    verb = "would post" if dry_run else "new"
    print(
        f"as of {report.as_of}: {counted(report.budgets_evaluated, 'budget')} evaluated, "
        f"{counted(len(report.planned), 'alert')} due ({verb})"
    )
    for post in report.planned:
        print(f"  {post.channel:<12} {plain(render(post.message)[0])}")
    for key in report.unroutable:
        print(f"  no channel for {key}: set the model's or team's channel, or finops_channel")
    if report.short_history:
        print(short_history_line(report.short_history, report.min_history_days))
    if dry_run:
        return
    print(f"{report.queued} queued in the outbox")
    if report.delivery is not None:
        delivery = report.delivery
        print(
            f"delivered {len(delivery.delivered)}, found already posted "
            f"{len(delivery.recovered)}, to retry {len(delivery.failed)}, "
            f"undeliverable {len(delivery.dead)}"
        )
    elif not delivering:
        print(NOT_DELIVERED)


def short_history_line(short_history: dict[str, int], min_days: int, limit: int = 10) -> str:
    """Return the line naming the scopes not judged for anomalies for lack of history."""
    scopes = sorted(short_history)
    named = ", ".join(
        f"{scope} ({short_history[scope]} day{'' if short_history[scope] == 1 else 's'})"
        for scope in scopes[:limit]
    )
    more = f", and {len(scopes) - limit} more" if len(scopes) > limit else ""
    count = f"{len(scopes)} scope{'' if len(scopes) == 1 else 's'}"
    return f"anomalies: skipped {count} with less than {min_days} days of history: {named}{more}"
