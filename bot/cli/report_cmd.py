"""`mlcost report spend --month YYYY-MM --by model,stage|run [--model M] --format csv|json`."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from bot.cli import chargeback_cmd
from bot.cli.arguments import add_cost_basis_argument, day_argument
from bot.cli.csv_export import csv_text
from bot.money import CostBasis, column_places, format_money_places

if TYPE_CHECKING:
    from bot.cli.context import CliContext
    from bot.periods import Period
    from bot.spend.reports import SpendLine, SpendReport, SpendTotals


def register(commands: Any) -> None:
    parser = commands.add_parser("report", help="reports from the ledger")
    sub = parser.add_subparsers(dest="report", required=True)
    spend = sub.add_parser("spend", help="spend per group with reconciled totals")
    spend.add_argument("--month", help="YYYY-MM (default: this month)")
    spend.add_argument(
        "--by",
        default="model,stage",
        help="dimensions, e.g. model,stage or account (the usage account: linked account, "
        "project, subscription; billing_account: the payer); or run alone: one line per run",
    )
    spend.add_argument("--model", help="only this model's spend (its runs, with --by run)")
    spend.add_argument("--format", choices=["table", "csv", "json"], default="table")
    add_cost_basis_argument(spend)
    spend.set_defaults(handler=run_spend)
    waste = sub.add_parser(
        "waste",
        help="idle, orphaned and stale spend with the fix, and the resource scans' open findings",
    )
    waste.add_argument("--as-of", type=day_argument, help="day to look back from")
    waste.add_argument(
        "--cloudwatch",
        action="store_true",
        help="also confirm idle GPU instances from CloudWatch CPU",
    )
    waste.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="json: one object per finding, money as exact strings (for tickets and scripts)",
    )
    waste.set_defaults(handler=run_waste)
    chargeback_cmd.register(sub)


def run_spend(args: argparse.Namespace, ctx: CliContext) -> int:
    """Print spend per group for a month."""
    from bot.ingest.rollup import ledger_day_range
    from bot.periods import month_of, month_period
    from bot.registry.catalog import find_model
    from bot.spend.reports import check_currency_setting, parse_dimensions, spend_report
    from bot.spend.runs import run_report

    period = month_period(args.month) if args.month else month_of(ctx.services.clock().date())
    by = parse_dimensions(args.by, allow_run=True)
    with ctx.session() as session:
        model = find_model(session, args.model).name if args.model else None
        check_currency_setting(session, ctx.settings.currency)
        if by == ["run"]:
            report = run_report(
                session=session, period=period, basis=CostBasis(args.cost), model=model
            )
        else:
            report = spend_report(
                session=session,
                period=period,
                by=by,
                basis=CostBasis(args.cost),
                where=None if model is None else {"model": model},
            )
        coverage = None if report.lines else ledger_day_range(session)
    print(render(report, args.format), end="")
    if not report.lines:  # on stderr: CSV and JSON on stdout stay data
        print(f"note: {no_spend_note(period, coverage)}", file=sys.stderr)
    return 0


def no_spend_note(period: Period, coverage: tuple[dt.date, dt.date] | None) -> str:
    """Say why a month has no spend: the ledger is empty, or which days it does cover."""
    if coverage is None:
        return "the ledger is empty; ingest billing data first (mlcost ingest focus|cur|...)"
    first, last = coverage
    return (
        f"no spend in {period.label}; the ledger covers {first:%Y-%m} to {last:%Y-%m} "
        f"({first} to {last})"
    )


def run_waste(args: argparse.Namespace, ctx: CliContext) -> int:
    """Print waste findings: the ledger's and the resource scans', ranked by monthly cost."""
    from bot.slack.blocks.waste import render_waste_json, render_waste_text
    from bot.waste.findings import waste_overview

    cloudwatch = ctx.services.aws("cloudwatch") if args.cloudwatch else None
    now = ctx.services.clock()
    as_of = args.as_of or now.date()
    if args.as_of:  # resource findings as they stand at the end of that day (Keep, saved so far)
        now = dt.datetime.combine(as_of + dt.timedelta(days=1), dt.time(), dt.UTC)
    with ctx.session() as session:
        overview = waste_overview(
            session=session, settings=ctx.settings, as_of=as_of, now=now, cloudwatch=cloudwatch
        )
    if args.format == "json":
        print(render_waste_json(overview, as_of))
    else:
        print(render_waste_text(overview), end="")
    return 0


def render(report: SpendReport, fmt: str) -> str:
    """Render a spend report as a table, CSV or JSON; each currency on its own, never summed."""
    if fmt == "json":
        return json.dumps(report.as_json(), indent=2) + "\n"
    if fmt == "csv":
        return _render_csv(report)
    return _render_table(report)


def _render_csv(report: SpendReport) -> str:
    """Render the lines, then each currency's totals, as CSV (safe to open in a spreadsheet)."""
    rows: list[list[object]] = [[*report.by, "currency", "cost", "gpu_hours"]]
    for line in report.lines:
        rows.append(
            [
                *(_label(report, line, k) for k in report.by),
                line.currency,
                line.cost,
                line.gpu_hours,
            ]
        )
    rows.append([])
    # under the same columns: the name where the groups are, then currency and amount
    pad = [""] * (len(report.by) - 1)
    for totals in report.totals:
        names = ["billed", "effective", "attributed", "unallocated"]
        for name in [*names, "idle"] if totals.idle else names:
            rows.append([f"total_{name}", *pad, totals.currency, getattr(totals, name), ""])
    return csv_text(rows)


def _render_table(report: SpendReport) -> str:
    """Render an aligned table per currency, each with its own totals.

    A currency's amounts, lines and totals, share one precision: cents when any is under 100.
    """
    header = [*report.by, f"{report.basis} cost", "GPU-h"]
    places = {
        t.currency: column_places(
            [*(line.cost for line in report.lines if line.currency == t.currency), *_amounts(t)]
        )
        for t in report.totals
    }
    body = [
        [
            *(_label(report, line, k) for k in report.by),
            format_money_places(line.cost, line.currency, places.get(line.currency, 2)),
            f"{line.gpu_hours:,.1f}",
        ]
        for line in report.lines
    ]
    widths = [max(len(str(r[i])) for r in [header, *body]) for i in range(len(header))]
    lines = [
        f"Spend {report.period.label} ({report.period.start}..{report.period.end}), "
        f"cost shown: {report.basis}"
        + (" — amortised" if report.basis == CostBasis.EFFECTIVE else " — as invoiced")
    ]
    several = len(report.totals) > 1
    if several:
        lines.append(
            f"billed in {len(report.totals)} currencies ({', '.join(report.currencies)}); "
            "amounts in different currencies are never added"
        )
    sections: list[SpendTotals | None] = [*report.totals] or [None]
    for section in sections:
        code = section.currency if section else None
        if several:
            lines.append("")
            lines.append(f"{code}:")
        lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
        lines.append("  ".join("-" * w for w in widths))
        for line, row in zip(report.lines, body, strict=True):
            if line.currency != code:
                continue
            lines.append(
                "  ".join(
                    str(c).rjust(w) if i >= len(report.by) else str(c).ljust(w)
                    for i, (c, w) in enumerate(zip(row, widths, strict=True))
                )
            )
        lines.append("")
        lines.extend(_totals_lines(report, section, several, places.get(code or "", 2)))
    if report.estimated_days:
        lines.append(f"note: {report.estimated_days} day(s) are provider estimates")
    return "\n".join(lines) + "\n"


def _amounts(totals: SpendTotals) -> list[Decimal]:
    return [
        totals.total,
        totals.billed,
        totals.effective,
        totals.attributed,
        totals.unallocated,
        totals.idle,
    ]


def _totals_lines(
    report: SpendReport, section: SpendTotals | None, several: bool, places: int
) -> list[str]:
    """Return one currency's total lines (or the no-spend line when there is no currency)."""
    if section is None:
        return [f"total {report.basis}: 0 (no spend in this period)"]
    code = section.currency
    money = lambda v: format_money_places(v, code, places)  # noqa: E731
    return [
        f"total {report.basis}{f' {code}' if several else ''}: {money(section.total)}  "
        f"(billed {money(section.billed)}, effective {money(section.effective)})",
        f"attributed: {money(section.attributed)}  unallocated: {money(section.unallocated)}"
        + (f"  idle cluster: {money(section.idle)}" if section.idle else ""),
    ]


def _label(report: SpendReport, line: SpendLine, name: str) -> str:
    """Return one cell: a run report's spend without a run is one `(no run)` line over all;
    spend without an owner is `(unallocated)`, idle cluster capacity `(idle cluster)`."""
    value = line.group[name]
    if value is not None:
        return value.isoformat() if isinstance(value, dt.date) else str(value)
    if "run" in report.by and line.group["run"] is None:
        return "(no run)" if name == "run" else ""
    return "(idle cluster)" if line.idle else "(unallocated)"
