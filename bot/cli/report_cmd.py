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
from bot.cli.table import Column, Table
from bot.counts import counted
from bot.errors import UsageError
from bot.money import CostBasis, column_places, format_money_places, shown_parts

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
        "project, subscription; billing_account: the payer); or run alone: one line per run "
        "(default: model,stage)",
    )
    spend.add_argument(
        "--model", help="only this model's spend (its runs, with --by run; default: every model)"
    )
    spend.add_argument(
        "--format", choices=["table", "csv", "json"], default="table", help="(default: table)"
    )
    spend.add_argument(
        "--totals",
        action="store_true",
        help="with --format csv: each currency's totals (billed, effective, attributed, "
        "unallocated, idle) as their own table, instead of the lines",
    )
    add_cost_basis_argument(spend)
    spend.set_defaults(handler=run_spend)
    waste = sub.add_parser(
        "waste",
        help="idle, orphaned and stale spend with the fix, and the resource scans' open findings",
    )
    waste.add_argument("--as-of", type=day_argument, help="day to look back from (default: today)")
    waste.add_argument(
        "--cloudwatch",
        action="store_true",
        help="also confirm idle GPU instances from CloudWatch CPU",
    )
    waste.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="json: one object per finding, money as exact strings (for tickets and scripts; "
        "default: text)",
    )
    waste.set_defaults(handler=run_waste)
    chargeback_cmd.register(sub)


def run_spend(args: argparse.Namespace, ctx: CliContext) -> int:
    """Print spend per group for a month."""
    from bot.ingest.rollup import ledger_day_range
    from bot.periods import month_of, month_period
    from bot.registry.names import model_name
    from bot.spend.reports import check_currency_setting, parse_dimensions, spend_report
    from bot.spend.runs import run_report

    if args.totals and args.format != "csv":
        raise UsageError("--totals goes with --format csv (the table and JSON carry the totals)")
    period = month_period(args.month) if args.month else month_of(ctx.now().date())
    by = parse_dimensions(args.by, allow_run=True)
    with ctx.reading() as session:
        model = model_name(session, args.model) if args.model else None
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
    print(render(report, args.format, totals=args.totals), end="")
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
    now = ctx.now()
    as_of = args.as_of or now.date()
    if args.as_of:  # resource findings as they stand at the end of that day (Keep, saved so far)
        now = dt.datetime.combine(as_of + dt.timedelta(days=1), dt.time(), dt.UTC)
    with ctx.reading() as connection:  # Core: the waste lists only read
        overview = waste_overview(
            session=connection,
            settings=ctx.settings.waste,
            as_of=as_of,
            now=now,
            cloudwatch=cloudwatch,
        )
    if args.format == "json":
        print(render_waste_json(overview, as_of))
    else:
        print(render_waste_text(overview), end="")
    return 0


def render(report: SpendReport, fmt: str, *, totals: bool = False) -> str:
    """Render a spend report as a table, CSV or JSON; each currency on its own, never summed.

    CSV is one table a spreadsheet or `pandas.read_csv` reads as it is: the lines (which add
    up to each currency's total), or with `totals` one row of totals per currency.
    """
    if fmt == "json":
        return json.dumps(report.as_json(), indent=2) + "\n"
    if fmt == "csv":
        return _render_totals_csv(report) if totals else _render_csv(report)
    return _render_table(report)


def _render_totals_csv(report: SpendReport) -> str:
    """Render one row per currency: the period, the basis and every total, exact."""
    names = ["total", "billed", "effective", "attributed", "unallocated", "idle"]
    rows: list[list[object]] = [["period", "basis", "currency", *names]]
    for totals in report.totals:
        rows.append(
            [
                report.period.label,
                str(report.basis),
                totals.currency,
                *(getattr(totals, name) for name in names),
            ]
        )
    return csv_text(rows)


def _render_csv(report: SpendReport) -> str:
    """Render the lines as CSV (safe to open in a spreadsheet): they add up to the totals."""
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
    return csv_text(rows)


def _render_table(report: SpendReport) -> str:
    """Render an aligned table per currency, each with its own totals.

    A currency's amounts, lines and totals, share one precision: cents when any is under 100.
    """
    columns = [Column(name) for name in report.by]
    columns += [Column(f"{report.basis} cost", right=True), Column("GPU-h", right=True)]
    places = {
        t.currency: column_places(
            [*(line.cost for line in report.lines if line.currency == t.currency), *_amounts(t)]
        )
        for t in report.totals
    }
    shown = _shown_costs(report, places)
    body = [
        [
            *(_label(report, line, k) for k in report.by),
            format_money_places(shown[i], line.currency, places.get(line.currency, 2)),
            f"{line.gpu_hours:,.1f}",
        ]
        for i, line in enumerate(report.lines)
    ]
    table = Table(columns, body)
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
        lines.append(table.header())
        lines.append(table.rule())
        for line, row in zip(report.lines, body, strict=True):
            if line.currency == code:
                lines.append(table.line(row))
        lines.append("")
        lines.extend(_totals_lines(report, section, several, places.get(code or "", 2), shown))
    if report.estimated_days:
        one = report.estimated_days == 1
        days = counted(report.estimated_days, "day")
        lines.append(
            f"note: {days} {'is a provider estimate' if one else 'are provider estimates'}"
        )
    return "\n".join(lines) + "\n"


def _shown_costs(report: SpendReport, places: dict[str, int]) -> list[Decimal]:
    """Round each currency's lines so the shown ones add up to its shown total."""
    shown = [line.cost for line in report.lines]
    for totals in report.totals:
        indexes = [i for i, line in enumerate(report.lines) if line.currency == totals.currency]
        if sum((shown[i] for i in indexes), Decimal(0)) != totals.total:
            continue  # lines that are not the whole total (never, for a spend report) stay exact
        parts, _total = shown_parts([shown[i] for i in indexes], places.get(totals.currency, 2))
        for i, part in zip(indexes, parts, strict=True):
            shown[i] = part
    return shown


def _amounts(totals: SpendTotals) -> list[Decimal]:
    return [
        totals.total,
        totals.billed,
        totals.effective,
        totals.attributed,
        totals.unallocated,
        totals.idle,
    ]


def _shown_split(
    report: SpendReport, section: SpendTotals, places: int, shown: list[Decimal]
) -> tuple[Decimal, Decimal, Decimal, Decimal]:
    """Return the shown total, attributed, unallocated and idle of one currency.

    Grouped by model, each is the sum of its shown lines (a line without a model is
    unallocated or idle cluster), so the table's lines add up to each; otherwise the three
    are rounded to add up to the shown total.
    """
    if "model" in report.by:
        parts = {"attributed": Decimal(0), "unallocated": Decimal(0), "idle": Decimal(0)}
        for line, cost in zip(report.lines, shown, strict=True):
            if line.currency != section.currency:
                continue
            kind = (
                "attributed"
                if line.group["model"] is not None
                else "idle"
                if line.idle
                else "unallocated"
            )
            parts[kind] += cost
        total = sum(parts.values(), Decimal(0))
        if total == shown_parts([section.total], places)[1]:
            return total, parts["attributed"], parts["unallocated"], parts["idle"]
    (attributed, unallocated, idle), total = shown_parts(
        [section.attributed, section.unallocated, section.idle], places
    )
    return total, attributed, unallocated, idle


def _totals_lines(
    report: SpendReport,
    section: SpendTotals | None,
    several: bool,
    places: int,
    shown: list[Decimal],
) -> list[str]:
    """Return one currency's total lines (or the no-spend line when there is no currency)."""
    if section is None:
        return [f"total {report.basis}: 0 (no spend in this period)"]
    code = section.currency
    money = lambda v: format_money_places(v, code, places)  # noqa: E731
    # the total, attributed, unallocated and idle as the table's lines add up to them
    total, attributed, unallocated, idle = _shown_split(report, section, places, shown)
    billed, effective = (
        (total, section.effective) if report.basis == CostBasis.BILLED else (section.billed, total)
    )
    return [
        f"total {report.basis}{f' {code}' if several else ''}: {money(total)}  "
        f"(billed {money(billed)}, effective {money(effective)})",
        f"attributed: {money(attributed)}  unallocated: {money(unallocated)}"
        + (f"  idle cluster: {money(idle)}" if section.idle else ""),
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
