"""`mlcost ingest focus|cur|cost-explorer|athena|opencost ...`: read, attribute, reconcile."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import TYPE_CHECKING, Any

from bot.cli import progress, value_cmd
from bot.cli.arguments import day_argument
from bot.errors import UsageError

if TYPE_CHECKING:
    from bot.cli.context import CliContext
    from bot.ingest.ledger import IngestReport
    from bot.ingest.sources.base import SpendSource


def register(commands: Any) -> None:
    parser = commands.add_parser("ingest", help="load spend from a billing source")
    sub = parser.add_subparsers(dest="source", required=True)
    focus = sub.add_parser("focus", help="FOCUS 0.5-1.3 export: .csv, .csv.gz, .parquet, s3://")
    focus.add_argument("locations", nargs="+", metavar="PATH_OR_S3_URI")
    focus.set_defaults(handler=run_files, source_kind="focus")
    cur = sub.add_parser("cur", help="AWS CUR (legacy or 2.0) Parquet/CSV; all parts of a month")
    cur.add_argument("locations", nargs="+", metavar="PATH_OR_S3_URI")
    cur.set_defaults(handler=run_files, source_kind="cur")
    ce = sub.add_parser("cost-explorer", help="AWS Cost Explorer, daily, by model tag")
    ce.add_argument("--start", type=day_argument, help="first day (default: lookback)")
    ce.add_argument("--end", type=day_argument, help="day after the last (default: today)")
    ce.add_argument("--group-by", help="second grouping: SERVICE (default), USAGE_TYPE, TAG:key")
    ce.add_argument("--account", help="billing account label (default: MLCOST_AWS_BILLING_ACCOUNT)")
    ce.add_argument(
        "--from-file",
        nargs="+",
        metavar="RESPONSE.json",
        help="read saved get-cost-and-usage answers (one file per page) instead of calling AWS",
    )
    ce.set_defaults(handler=run_cost_explorer)
    athena = sub.add_parser("athena", help="CUR table in Athena, grouped in SQL")
    athena.add_argument("--database", required=True)
    athena.add_argument("--table", required=True)
    athena.add_argument("--month", required=True, help="YYYY-MM")
    athena.add_argument("--output", help="s3:// query result location")
    athena.add_argument("--workgroup")
    athena.set_defaults(handler=run_athena)
    opencost = sub.add_parser(
        "opencost", help="Kubernetes costs from OpenCost's /allocation (or /cloudCost) API or file"
    )
    opencost.add_argument("location", metavar="URL_OR_FILE")
    opencost.add_argument(
        "--window", help="OpenCost window for a URL: 7d, yesterday, or START,END in RFC3339"
    )
    opencost.add_argument(
        "--aggregate", help="OpenCost aggregate for a URL, e.g. namespace or namespace,pod"
    )
    opencost.set_defaults(handler=run_opencost)
    value_cmd.register_ingest(sub)


def run_files(args: argparse.Namespace, ctx: CliContext) -> int:
    """Ingest FOCUS or CUR files."""
    from bot.ingest.sources.files import is_s3

    source: SpendSource
    s3 = ctx.services.aws("s3") if any(is_s3(loc) for loc in args.locations) else None
    if args.source_kind == "focus":
        from bot.ingest.sources.focus import FocusSource

        source = FocusSource(args.locations, s3, default_currency=ctx.settings.currency)
    else:
        from bot.ingest.sources.cur import CurSource

        source = CurSource(args.locations, s3, default_currency=ctx.settings.currency)
    return _run(source, ctx)


def run_cost_explorer(args: argparse.Namespace, ctx: CliContext) -> int:
    """Poll Cost Explorer for a window of days."""
    from bot.ingest.sources.cost_explorer import CE_REGION, CostExplorerSource, SavedResponses
    from bot.registry.sync import cost_explorer_tag_key

    with ctx.session() as session:
        tag_key = cost_explorer_tag_key(session=session, settings=ctx.settings)
    client: Any
    if args.from_file:
        client = SavedResponses(args.from_file)
        start, end = args.start or client.start, args.end or client.end
        if client.longer_than_a_day:
            print("note: the saved results are not daily; each period is booked on its first day")
    else:
        client = ctx.services.aws("ce", CE_REGION)
        end = args.end or ctx.services.clock().date()
        start = args.start or end - dt.timedelta(days=ctx.settings.poll_lookback_days)
    source = CostExplorerSource(
        client,
        start,
        end,
        model_tag_key=tag_key,
        second_group=args.group_by or ctx.settings.cost_explorer_group_key,
        billing_account=args.account or ctx.settings.aws_billing_account or "aws",
        default_currency=ctx.settings.currency,
    )
    return _run(source, ctx)


def run_athena(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run the grouping query in Athena and ingest its result."""
    from bot.ingest.sources.athena import AthenaSource

    if not args.output and not args.workgroup:
        raise UsageError("athena needs --output s3://... or a --workgroup with an output location")
    source = AthenaSource(
        ctx.services.aws("athena"),
        database=args.database,
        table=args.table,
        month=args.month,
        output=args.output,
        workgroup=args.workgroup,
        default_currency=ctx.settings.currency,
    )
    return _run(source, ctx)


def run_opencost(args: argparse.Namespace, ctx: CliContext) -> int:
    """Read OpenCost allocations or cloud costs from its API or a saved answer."""
    from bot.ingest.sources.opencost import OpenCostSource

    source = OpenCostSource(
        args.location,
        window=args.window,
        aggregate=args.aggregate,
        default_currency=ctx.settings.currency,
        timeout=ctx.settings.opencost_timeout_seconds,
        max_bytes=ctx.settings.opencost_max_bytes,
    )
    return _run(source, ctx)


def _run(source: SpendSource, ctx: CliContext) -> int:
    from bot.ingest.ledger import ingest

    with progress.task(f"ingest {source.kind}") as bar, ctx.session() as session:
        report = ingest(source, session=session, progress=bar)
    print_report(report)
    return 0 if report.reconciled else 1


def print_report(report: IngestReport) -> None:
    """Print what an ingestion read, its notes and one reconciliation line per currency."""
    print(
        f"{report.source} {report.location}"
        + (f" ({report.format})" if report.format else "")
        + f": read {report.rows_read:,} rows, wrote "
        f"{report.rows_written:,} daily rows (replaced {report.replaced_rows:,})"
        + (f", {report.api_requests} API requests" if report.api_requests else "")
    )
    for scope in report.scopes:
        print(
            f"  {scope.provider} {scope.billing_account} {scope.column} {scope.start}..{scope.end}"
        )
    for totals in report.totals:
        print(
            f"  billed {totals.billed:.2f} {totals.currency}, effective (amortised) "
            f"{totals.effective:.2f} {totals.currency}"
        )
    for note in report.notes:
        print(f"  note: {note}")
    print(report.reconciliation_line())
