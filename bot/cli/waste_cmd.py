"""`mlcost waste scan`: find idle and orphaned resources in the account itself, priced."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from bot.cli.table import Column, Table
from bot.cli.terminal import terminal_text
from bot.counts import counted
from bot.errors import AwsUnavailable, UsageError
from bot.money import format_money_places, shown_parts

if TYPE_CHECKING:
    from bot.cli.context import CliContext
    from bot.waste.scan.run import ScanReport

EXIT_INCOMPLETE = 3  # some scanner could not run: the findings shown are partial


def register(commands: Any) -> None:
    """Add `mlcost waste` and its `scan` subcommand."""
    waste = commands.add_parser("waste", help="resources that burn money: scan the account")
    sub = waste.add_subparsers(dest="waste_command", required=True, metavar="SUBCOMMAND")
    scan = sub.add_parser(
        "scan",
        help="find idle GPUs, endpoints nobody calls, notebooks left on, orphaned volumes, "
        "snapshots and stale checkpoints (read-only)",
    )
    scan.add_argument(
        "--regions", type=region_list, help="comma-separated regions (default: MLCOST_SCAN_REGIONS)"
    )
    scan.add_argument(
        "--format", choices=("table", "json"), default="table", help="(default: table)"
    )
    scan.add_argument(
        "--post",
        action="store_true",
        help="record the findings and post the new and worse ones to their owners' channels "
        "(unowned ones to FinOps); close the ones that are gone",
    )
    scan.set_defaults(handler=run_scan, unexpected_error_exit=1)


def region_list(text: str) -> list[str]:
    """Parse `us-east-1,eu-west-1`; refuse anything that is not a region name."""
    import re

    regions = [r.strip() for r in text.split(",") if r.strip()]
    bad = [r for r in regions if not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", r)]
    if not regions or bad:
        raise argparse.ArgumentTypeError(f"not a region: {', '.join(bad) or repr(text)}")
    return regions


def run_scan(args: argparse.Namespace, ctx: CliContext) -> int:
    """Scan every region, print the findings ranked by monthly cost, then the scan's notes."""
    from bot.waste.jobs import scan_regions
    from bot.waste.pricing import load_price_table
    from bot.waste.scan.s3 import parse_pattern
    from bot.waste.scan.s3_inventory import parse_destination

    settings = ctx.settings.scan
    regions = args.regions or settings.scan_regions
    if not regions:
        raise UsageError("no regions to scan: set MLCOST_SCAN_REGIONS or pass --regions")
    for pattern in settings.scan_s3_patterns:  # refused before any AWS call
        parse_pattern(pattern)
    for destination in settings.scan_s3_inventory.values():
        parse_destination(destination)
    load_price_table(settings.price_table_file)
    try:
        services = ctx.services
        report = scan_regions(
            regions,
            session_factory=services.session_factory,
            settings=services.settings.scan,
            clock=services.clock,
            aws=services.aws,
        )
    except AwsUnavailable as exc:  # no scanner could run: as incomplete as a scan can be
        print(f"error: {terminal_text(str(exc))}", file=sys.stderr)
        return EXIT_INCOMPLETE
    print(render_json(report) if args.format == "json" else render_table(report))
    for failure in report.failures:
        print(f"warning: {terminal_text(str(failure))}", file=sys.stderr)
    if getattr(args, "post", False):
        from bot.cli.waste_post import post_and_print

        post_and_print(ctx, report, to_stderr=args.format == "json")
    return EXIT_INCOMPLETE if report.failures else 0


def render_json(report: ScanReport) -> str:
    """Render the report as JSON (money as strings, with its currency)."""
    return json.dumps(
        {
            "account": report.account,
            "regions": list(report.regions),
            "currency": report.currency,
            "total_monthly_cost": str(report.total_monthly_cost),
            "total_monthly_saving": str(report.total_monthly_saving),
            "findings": [f.to_dict() for f in report.findings],
            "failures": [
                {"region": f.region, "kind": f.kind, "message": f.message} for f in report.failures
            ],
            "notes": [
                {"region": n.region, "kind": n.kind, "message": n.message} for n in report.notes
            ],
        },
        indent=2,
    )


def render_table(report: ScanReport) -> str:
    """Render the report as a plain-text table, largest monthly cost first."""
    cur = report.currency
    head = f"Resource scan of account {report.account} in {', '.join(report.regions)}"
    if not report.findings:
        lines = [head, "no idle or orphaned resources found"]
    else:
        # each column's amounts as shown add up to its total as shown
        costs, cost_total = shown_parts([f.monthly_cost for f in report.findings], 2)
        savings, saving_total = shown_parts([f.monthly_saving for f in report.findings], 2)
        rows = [
            (
                format_money_places(cost, cur, 2),
                format_money_places(saving, cur, 2),
                f.region,
                str(f.kind),
                f.resource_id,
                f.recommendation.text,
            )
            for f, cost, saving in zip(report.findings, costs, savings, strict=True)
        ]
        columns = [Column("Cost/month", right=True), Column("Saving/month", right=True)]
        columns += [Column(t) for t in ("Region", "Kind", "Resource", "Fix")]
        table = Table(columns, rows)
        lines = [head, table.header()]
        for f, row in zip(report.findings, rows, strict=True):
            lines.append(table.line(row))
            lines.append(f"    why: {f.evidence}")
            lines.append(f"    signal: {f.signal}; price: {f.price_source}")
        cost = format_money_places(cost_total, cur, 2)
        saving = format_money_places(saving_total, cur, 2)
        lines.append(
            f"{counted(len(report.findings), 'finding')}: {cost} a month, "
            f"{saving} saved by the fixes"
        )
    for failure in report.failures:
        lines.append(f"not scanned: {failure}")
    for note in report.notes:  # caveats, not errors: they leave the exit code alone
        lines.append(f"note: {note}")
    return "\n".join(lines)
