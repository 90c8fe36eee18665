"""`mlcost ingest value FILE.csv` and `mlcost ingest cloudwatch`: value per model and day."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.cli.arguments import day_argument
from bot.counts import counted
from bot.errors import IngestError

if TYPE_CHECKING:
    from bot.cli.context import CliContext


def register_ingest(sources: Any) -> None:
    """Add the value sources to `mlcost ingest`."""
    value = sources.add_parser("value", help="value metrics CSV: date,model,metric,units[,revenue]")
    value.add_argument(
        "files",
        nargs="+",
        type=Path,
        metavar="FILE.csv",
        help="CSV files with a header: date,model,metric,units and optionally revenue",
    )
    value.set_defaults(handler=run_value_csv)
    cloudwatch = sources.add_parser(
        "cloudwatch", help="SageMaker endpoint Invocations from CloudWatch, per model and day"
    )
    cloudwatch.add_argument(
        "--start",
        type=day_argument,
        help="first day (default: --end less MLCOST_POLL_LOOKBACK_DAYS, 7)",
    )
    cloudwatch.add_argument("--end", type=day_argument, help="day after the last (default: today)")
    cloudwatch.add_argument(
        "--model", action="append", help="only this model (repeatable; default: every model)"
    )
    cloudwatch.set_defaults(handler=run_cloudwatch)


def run_value_csv(args: argparse.Namespace, ctx: CliContext) -> int:
    """Validate every file completely, then record all rows in one transaction."""
    from bot.economics.value_metrics import known_model_names, read_value_csv, record_values

    with ctx.session() as session:
        known = known_model_names(session)
        written = 0
        for path in args.files:
            rows = read_value_csv(path, known)
            written += record_values(rows, session=session, source="csv", recorded_by="cli")
            days = sorted({r.day for r in rows})
            models = sorted({r.model for r in rows})
            print(
                f"{path}: {counted(len(rows), 'row')}, {counted(len(models), 'model')}, "
                f"{days[0]}..{days[-1]}"
            )
    print(f"recorded {counted(written, 'value row')} (re-ingesting replaces, never doubles)")
    return 0


def run_cloudwatch(args: argparse.Namespace, ctx: CliContext) -> int:
    """Pull daily Invocations of the SageMaker endpoints attributed to each model."""
    from bot.economics.cloudwatch_invocations import endpoints_by_model, fetch_invocations
    from bot.economics.value_metrics import record_values

    end = args.end or ctx.services.clock().date()
    start = args.start or end - dt.timedelta(days=ctx.settings.poll_lookback_days)
    if start >= end:
        raise IngestError(f"--start {start} must be before --end {end}")
    with ctx.session() as session:
        endpoints = endpoints_by_model(session=session, start=start, end=end, models=args.model)
        if not endpoints:
            print(f"no SageMaker endpoints are attributed to a model in {start}..{end}")
            return 0
        rows = fetch_invocations(
            cloudwatch=ctx.services.aws("cloudwatch"),
            sagemaker=ctx.services.aws("sagemaker"),
            endpoints=endpoints,
            start=start,
            end=end,
        )
        record_values(rows, session=session, source="cloudwatch", recorded_by="cli")
    for model, names in endpoints.items():
        units = sum((r.units for r in rows if r.model == model), start=0)
        print(f"{model}: {units:,} invocations from {', '.join(names)}")
    print(f"recorded {len(rows):,} value rows for {start}..{end}")
    return 0
