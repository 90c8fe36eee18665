"""`mlcost review show|post --month YYYY-MM`: unit economics and verdicts; the Slack review."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from bot.cli.table import Column, Table
from bot.cli.terminal import NOT_DELIVERED
from bot.counts import counted
from bot.money import column_places, format_money_places, format_percent
from bot.periods import Period, month_of, month_period, previous_month

if TYPE_CHECKING:
    from bot.cli.context import CliContext
    from bot.economics.unit_costs import ModelEconomics


def register(commands: Any) -> None:
    parser = commands.add_parser("review", help="unit economics and the monthly review")
    sub = parser.add_subparsers(dest="review_command", required=True)
    show = sub.add_parser("show", help="unit economics and verdicts for a month (no Slack)")
    show.add_argument("--month", help="YYYY-MM (default: last month)")
    show.add_argument(
        "--format", choices=["table", "json"], default="table", help="(default: table)"
    )
    show.set_defaults(handler=run_show)
    post = sub.add_parser("post", help="post the month's review to every team's channel, once")
    post.add_argument("--month", help="YYYY-MM (default: last month)")
    post.add_argument(
        "--team", action="append", help="only this team (repeatable; default: every team)"
    )
    post.set_defaults(handler=run_post)


def _month(text: str | None, ctx: CliContext) -> Period:
    if text:
        return month_period(text)
    return previous_month(month_of(ctx.now().date()))


def run_show(args: argparse.Namespace, ctx: CliContext) -> int:
    """Print each model's unit economics and verdict for the month."""
    from bot.economics.unit_costs import month_economics

    month = _month(args.month, ctx)
    with ctx.reading() as connection:  # Core: the month's economics only read
        economics = month_economics(
            session=connection, month=month, settings=ctx.settings.economics
        )
    if args.format == "json":
        print(json.dumps([e.as_json() for e in economics.values()], indent=2))
    else:
        print(render_economics(economics.values(), month), end="")
    return 0


def render_economics(economics: Iterable[ModelEconomics], month: Period) -> str:
    """Render unit economics as a table: cost, value, cost per 1k units, budget, verdict.

    Each model's money is in its own billing currency; there is no total line.
    """
    from bot.economics.words import format_change, format_units

    # numbers right-aligned under their titles; the units carry their metric's name
    columns = [Column("model"), Column("cost", right=True), Column("vs prev", right=True)]
    columns += [Column("units"), Column("vs prev", right=True)]
    columns += [Column(t, right=True) for t in ("per 1k", "was", "serving/1k", "budget")]
    columns.append(Column("verdict"))
    economics = list(economics)
    unit_costs = {
        "now": [e.unit_cost for e in economics],
        "was": [e.previous_unit_cost for e in economics],
        "serving": [e.stage_unit_cost("serving") for e in economics],
    }
    # one precision per column: four decimals when any value in it is below one unit
    places = {
        name: 4 if any(v is not None and abs(v) < 1 for v in values) else 2
        for name, values in unit_costs.items()
    }

    cost_places = column_places(e.current.cost for e in economics)

    def unit_cost(name: str, index: int, currency: str) -> str:
        value = unit_costs[name][index]
        if value is None:
            return "n/a"
        if value == 0:  # nothing at all, not a rounded-down amount
            return format_money_places(value, currency, 0)
        shown = format_money_places(value, currency, places[name])
        if value > 0 and shown == format_money_places(Decimal(0), currency, places[name]):
            # not nothing, though it rounds to $0.0000: say it is under the last place shown
            smallest = Decimal(1).scaleb(-places[name])
            return "< " + format_money_places(smallest, currency, places[name])
        return shown

    rows = []
    for index, e in enumerate(economics):
        currency = e.currency
        rows.append(
            [
                e.model,
                format_money_places(e.current.cost, currency, cost_places),
                format_change(e.cost_change_pct),
                format_units(e.current.units) + (f" {e.metric}" if e.metric else ""),
                format_change(e.value_change_pct),
                unit_cost("now", index, currency),
                unit_cost("was", index, currency),
                unit_cost("serving", index, currency),
                format_percent(e.budget_used_pct) if e.budget is not None else "no budget",
                ("! " if e.verdict.flagged else "  ") + e.verdict.headline,
            ]
        )
    lines = [
        f"Unit economics {month.label} vs {previous_month(month).label} "
        "(billed cost; per 1k units of the primary metric)"
    ]
    lines.extend(Table(columns, rows).lines(rule=True))
    flagged = [e for e in economics if e.verdict.flagged]
    for e in flagged:
        lines.append(f"! {e.model}: {e.verdict.headline} — {e.verdict.detail}")
    return "\n".join(lines) + "\n"


def run_post(args: argparse.Namespace, ctx: CliContext) -> int:
    """Open and post the month's reviews; a review already posted is not posted again.

    Without a Slack token the reviews are opened and their messages queued, not delivered
    (bot/cli/terminal.py): `mlcost serve` delivers them.
    """
    from bot.review.delivery import post_reviews
    from bot.review.open import open_reviews

    month = _month(args.month, ctx)
    services = ctx.services
    teams = set(args.team) if args.team else None
    if ctx.settings.slack_bot_token is None:
        with ctx.session() as session:
            opened = open_reviews(
                session=session,
                month=month,
                settings=ctx.settings.economics,
                now=services.clock(),
                teams=teams,
            )
            count = len(opened)
        print(f"review {month.label}: opened {counted(count, 'team review')}")
        print(NOT_DELIVERED)
        return 0
    report = post_reviews(
        session_factory=services.session_factory,
        edge=services.delivery_edge,
        month=month,
        settings=services.settings.review,
        now=services.clock(),
        teams=teams,
    )
    print(
        f"review {month.label}: opened {counted(len(report.opened), 'team review')}, delivered "
        f"{counted(len(report.delivered), 'message')}, "
        f"uploaded {counted(len(report.charts), 'chart')}"
    )
    for key in report.failed:
        print(f"  not delivered yet (retried by the next run): {key}")
    return 1 if report.failed else 0
