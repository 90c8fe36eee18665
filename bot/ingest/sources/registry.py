"""The billing sources, each registered once: `mlcost ingest NAME` and the poll build from here.

A source is declared by a BillingSource: its name (the `mlcost ingest` subcommand and the
MLCOST_POLL_SOURCES kind), the help line, the arguments it takes on the command line, how it is
built from those arguments, and, if it can be polled, how the poll builds it from the settings.
Light to import (`mlcost --help` reads it): the source modules are imported when a source is built.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.errors import UsageError
from bot.periods import day_argument

if TYPE_CHECKING:
    from bot.config import IngestSettings
    from bot.ingest.sources.base import SpendSource

# aws("s3") or aws("ce", "us-east-1") returns a boto3 client (or a fake one)
AwsClientFactory = Callable[..., Any]


def _ignore(text: str) -> None:
    return


@dataclass(frozen=True)
class SourceContext:
    """What building a source may use, handed in by whoever builds it (the CLI, the poll).

    `today` is the command line's UTC date or the poll's local day; `model_tag_key` is the
    registry's Cost Explorer tag key (reading it may open a session); `note` tells whoever runs
    the command something about the source, as `note: ...`.
    """

    settings: IngestSettings
    aws: AwsClientFactory
    today: Callable[[], dt.date]
    model_tag_key: Callable[[], str]
    note: Callable[[str], None] = _ignore


@dataclass(frozen=True)
class Polling:
    """How the scheduled poll builds a source from an MLCOST_POLL_SOURCES entry.

    `location` is what an entry puts after `NAME:` (an example, shown when an entry is refused),
    or None when the entry is the name alone; `aliases` are other names the entry may use.
    """

    build: Callable[[str | None, SourceContext], SpendSource]
    location: str | None = None
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class BillingSource:
    """One billing source: how `mlcost ingest NAME` takes and builds it, and how it is polled.

    `poll` is None for a source the scheduled poll cannot re-read (it needs a month, say).
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    build: Callable[[argparse.Namespace, SourceContext], SpendSource]
    poll: Polling | None = None

    def poll_example(self) -> str:
        """Return how an MLCOST_POLL_SOURCES entry names this source (`cur:s3://bucket/prefix/`)."""
        location = self.poll.location if self.poll is not None else None
        return self.name if location is None else f"{self.name}:{location}"


_added: dict[str, BillingSource] = {}


def billing_sources() -> list[BillingSource]:
    """Return every billing source: the built-in ones, then those registered, in order."""
    return [*BUILT_IN, *_added.values()]


def register(source: BillingSource) -> BillingSource:
    """Add a billing source to `mlcost ingest` and the poll; its name must be new."""
    if any(known.name == source.name for known in billing_sources()):
        raise ValueError(f"a billing source named {source.name!r} is already registered")
    _added[source.name] = source
    return source


def unregister(name: str) -> None:
    """Remove a billing source added with `register`."""
    del _added[name]


@contextmanager
def registered(source: BillingSource) -> Iterator[BillingSource]:
    """Register a billing source for the length of a `with` block."""
    register(source)
    try:
        yield source
    finally:
        unregister(source.name)


def pollable(kind: str, location: str | None) -> BillingSource | None:
    """Return the source an MLCOST_POLL_SOURCES entry names, or None if it cannot be polled."""
    for source in billing_sources():
        poll = source.poll
        if poll is None or kind not in (source.name, *poll.aliases):
            continue
        if (location is None) == (poll.location is None):
            return source
    return None


# --- the built-in sources -------------------------------------------------------------------


def _add_file_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "locations",
        nargs="+",
        metavar="PATH_OR_S3_URI",
        help="files, folders or s3:// prefixes (all parts of a month; .gz read as is)",
    )


def _s3_for(locations: list[str], context: SourceContext) -> Any:
    """Return an S3 client if any location is in S3 (None otherwise)."""
    return context.aws("s3") if any(loc.startswith("s3://") for loc in locations) else None


def _build_focus(args: argparse.Namespace, context: SourceContext) -> SpendSource:
    from bot.ingest.sources.focus import FocusSource

    s3 = _s3_for(args.locations, context)
    return FocusSource(args.locations, s3, default_currency=context.settings.currency)


def _build_cur(args: argparse.Namespace, context: SourceContext) -> SpendSource:
    from bot.ingest.sources.cur import CurSource

    s3 = _s3_for(args.locations, context)
    return CurSource(args.locations, s3, default_currency=context.settings.currency)


def _poll_export(kind: str) -> Callable[[str | None, SourceContext], SpendSource]:
    """Return how the poll re-reads the recent billing periods of a `kind` export."""

    def build(location: str | None, context: SourceContext) -> SpendSource:
        from bot.ingest.sources.exports import RecentExportSource, recent_periods

        assert location is not None  # Polling.location says an entry names one
        return RecentExportSource(
            kind,
            location,
            recent_periods(context.today()),
            s3_client=_s3_for([location], context),
            default_currency=context.settings.currency,
        )

    return build


def _add_cost_explorer_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--start",
        type=day_argument,
        help="first day (default: --end less MLCOST_POLL_LOOKBACK_DAYS, 7)",
    )
    parser.add_argument("--end", type=day_argument, help="day after the last (default: today)")
    parser.add_argument(
        "--group-by", help="second grouping: SERVICE (default), USAGE_TYPE, TAG:key"
    )
    parser.add_argument(
        "--account", help="billing account label (default: MLCOST_AWS_BILLING_ACCOUNT)"
    )
    parser.add_argument(
        "--from-file",
        nargs="+",
        metavar="RESPONSE.json",
        help="read saved get-cost-and-usage answers (one file per page) instead of calling AWS "
        "(default: call AWS)",
    )


def _build_cost_explorer(args: argparse.Namespace, context: SourceContext) -> SpendSource:
    from bot.ingest.sources.cost_explorer import CE_REGION, CostExplorerSource, SavedResponses

    settings = context.settings
    tag_key = context.model_tag_key()
    client: Any
    if args.from_file:
        client = SavedResponses(args.from_file)
        start, end = args.start or client.start, args.end or client.end
        if client.longer_than_a_day:
            context.note("the saved results are not daily; each period is booked on its first day")
    else:
        client = context.aws("ce", CE_REGION)
        end = args.end or context.today()
        start = args.start or end - dt.timedelta(days=settings.poll_lookback_days)
    return CostExplorerSource(
        client,
        start,
        end,
        model_tag_key=tag_key,
        second_group=args.group_by or settings.cost_explorer_group_key,
        billing_account=args.account or settings.aws_billing_account or "aws",
        default_currency=settings.currency,
    )


def _poll_cost_explorer(location: str | None, context: SourceContext) -> SpendSource:
    from bot.ingest.sources.cost_explorer import CE_REGION, CostExplorerSource

    settings, today = context.settings, context.today()
    return CostExplorerSource(
        context.aws("ce", CE_REGION),
        today - dt.timedelta(days=settings.poll_lookback_days),
        today,
        model_tag_key=context.model_tag_key(),
        second_group=settings.cost_explorer_group_key,
        billing_account=settings.aws_billing_account or "aws",
        default_currency=settings.currency,
    )


def _add_athena_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--database", required=True, help="the Athena database (required)")
    parser.add_argument("--table", required=True, help="the CUR table in it (required)")
    parser.add_argument("--month", required=True, help="YYYY-MM (required)")
    parser.add_argument(
        "--output", help="s3:// query result location (default: the workgroup's; one is needed)"
    )
    parser.add_argument("--workgroup", help="Athena workgroup (default: Athena's, primary)")


def _build_athena(args: argparse.Namespace, context: SourceContext) -> SpendSource:
    from bot.ingest.sources.athena import AthenaSource

    if not args.output and not args.workgroup:
        raise UsageError("athena needs --output s3://... or a --workgroup with an output location")
    return AthenaSource(
        context.aws("athena"),
        database=args.database,
        table=args.table,
        month=args.month,
        output=args.output,
        workgroup=args.workgroup,
        default_currency=context.settings.currency,
    )


def _add_opencost_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "location",
        metavar="URL_OR_FILE",
        help="OpenCost's API URL (http://host:9003) or a saved /allocation answer (.json)",
    )
    parser.add_argument(
        "--window",
        help="OpenCost window for a URL: 7d, yesterday, or START,END in RFC3339 "
        "(default: the URL's own window=; a URL needs one)",
    )
    parser.add_argument(
        "--aggregate",
        help="OpenCost aggregate for a URL, e.g. namespace or namespace,pod "
        "(default: the URL's own, else OpenCost's)",
    )


def _build_opencost(args: argparse.Namespace, context: SourceContext) -> SpendSource:
    from bot.ingest.sources.opencost import OpenCostSource

    settings = context.settings
    return OpenCostSource(
        args.location,
        window=args.window,
        aggregate=args.aggregate,
        default_currency=settings.currency,
        timeout=settings.opencost_timeout_seconds,
        max_bytes=settings.opencost_max_bytes,
    )


def _poll_opencost(location: str | None, context: SourceContext) -> SpendSource:
    from bot.ingest.sources.opencost import OpenCostSource, opencost_window

    assert location is not None  # Polling.location says an entry names one
    settings, today = context.settings, context.today()
    start = today - dt.timedelta(days=settings.poll_lookback_days)
    return OpenCostSource(
        location,
        window=opencost_window(start, today),
        default_currency=settings.currency,
        timeout=settings.opencost_timeout_seconds,
        max_bytes=settings.opencost_max_bytes,
    )


BUILT_IN: tuple[BillingSource, ...] = (
    BillingSource(
        "focus",
        "FOCUS 0.5-1.3 export: .csv, .csv.gz, .parquet, s3://",
        _add_file_arguments,
        _build_focus,
        Polling(_poll_export("focus"), location="s3://bucket/prefix/"),
    ),
    BillingSource(
        "cur",
        "AWS CUR (legacy or 2.0) Parquet/CSV; all parts of a month",
        _add_file_arguments,
        _build_cur,
        Polling(_poll_export("cur"), location="s3://bucket/prefix/"),
    ),
    BillingSource(
        "cost-explorer",
        "AWS Cost Explorer, daily, by model tag",
        _add_cost_explorer_arguments,
        _build_cost_explorer,
        Polling(_poll_cost_explorer, aliases=("ce",)),
    ),
    BillingSource(
        "athena", "CUR table in Athena, grouped in SQL", _add_athena_arguments, _build_athena
    ),
    BillingSource(
        "opencost",
        "Kubernetes costs from OpenCost's /allocation (or /cloudCost) API or file",
        _add_opencost_arguments,
        _build_opencost,
        Polling(_poll_opencost, location="http://opencost:9003"),
    ),
)
