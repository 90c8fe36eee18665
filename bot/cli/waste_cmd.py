"""`mlcost waste scan`: find idle and orphaned resources in the account itself, priced."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from bot.errors import AwsUnavailable, UsageError
from bot.money import format_money_places

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
        "--regions", type=region_list, help="comma-separated regions (default MLCOST_SCAN_REGIONS)"
    )
    scan.add_argument("--format", choices=("table", "json"), default="table")
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

    settings = ctx.settings
    regions = args.regions or settings.scan_regions
    if not regions:
        raise UsageError("no regions to scan: set MLCOST_SCAN_REGIONS or pass --regions")
    for pattern in settings.scan_s3_patterns:  # refused before any AWS call
        parse_pattern(pattern)
    for destination in settings.scan_s3_inventory.values():
        parse_destination(destination)
    load_price_table(settings.price_table_file)
    try:
        report = scan_regions(ctx.services, regions)
    except AwsUnavailable as exc:  # no scanner could run: as incomplete as a scan can be
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INCOMPLETE
    print(render_json(report) if args.format == "json" else render_table(report))
    for failure in report.failures:
        print(f"warning: {failure}", file=sys.stderr)
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
        rows = [
            (
                format_money_places(f.monthly_cost, cur, 2),
                format_money_places(f.monthly_saving, cur, 2),
                f.region,
                str(f.kind),
                f.resource_id,
                f.recommendation.text,
            )
            for f in report.findings
        ]
        titles = ("Cost/month", "Saving/month", "Region", "Kind", "Resource", "Fix")
        widths = [max(len(t), *(len(r[i]) for r in rows)) for i, t in enumerate(titles[:-1])]

        def line(cells: tuple[str, ...]) -> str:
            money = [cells[0].rjust(widths[0]), cells[1].rjust(widths[1])]
            rest = [c.ljust(w) for c, w in zip(cells[2:5], widths[2:], strict=True)]
            return "  ".join([*money, *rest, cells[5]]).rstrip()

        lines = [head, line(titles)]
        for f, row in zip(report.findings, rows, strict=True):
            lines.append(line(row))
            lines.append(f"    why: {f.evidence}")
            lines.append(f"    signal: {f.signal}; price: {f.price_source}")
        cost = format_money_places(report.total_monthly_cost, cur, 2)
        saving = format_money_places(report.total_monthly_saving, cur, 2)
        lines.append(
            f"{len(report.findings)} finding(s): {cost} a month, {saving} saved by the fixes"
        )
    for failure in report.failures:
        lines.append(f"not scanned: {failure}")
    for note in report.notes:  # caveats, not errors: they leave the exit code alone
        lines.append(f"note: {note}")
    return "\n".join(lines)
