"""`mlcost ingest focus|cur|cost-explorer|athena|opencost ...`: read, attribute, reconcile.

The billing sources and their arguments come from bot/ingest/sources/registry.py.
"""

from __future__ import annotations

import argparse
import importlib.abc
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from bot.cli import progress, value_cmd
from bot.counts import counted
from bot.ingest.sources.registry import BillingSource, SourceContext, billing_sources
from bot.money import format_money_places

if TYPE_CHECKING:
    from bot.cli.context import CliContext
    from bot.db.reading import Reader
    from bot.ingest.ledger import IngestReport
    from bot.ingest.sources.base import SpendSource


def register(commands: Any) -> None:
    parser = commands.add_parser("ingest", help="load spend from a billing source")
    sub = parser.add_subparsers(dest="source", required=True)
    for source in billing_sources():
        command = sub.add_parser(source.name, help=source.help)
        source.add_arguments(command)
        command.set_defaults(handler=run_source, billing_source=source)
    value_cmd.register_ingest(sub)


def run_source(args: argparse.Namespace, ctx: CliContext) -> int:
    """Build the billing source the command names from its arguments, and ingest it."""
    source: BillingSource = args.billing_source
    return _run(source.build(args, source_context(ctx)), ctx)


def source_context(ctx: CliContext) -> SourceContext:
    """Return what a source is built with on the command line; each part is made when used."""

    def model_tag_key() -> str:
        from bot.registry.stored import cost_explorer_tag_key

        with ctx.reading() as connection:
            return cost_explorer_tag_key(connection, settings=ctx.settings.attribution)

    return SourceContext(
        settings=ctx.settings.ingest,
        aws=lambda service, region=None: ctx.services.aws(service, region),
        today=lambda: ctx.services.clock().date(),
        model_tag_key=model_tag_key,
        note=lambda text: print(f"note: {text}"),
    )


class _NoPandas(importlib.abc.MetaPathFinder):
    """An import finder that says pandas is not installed."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> None:
        if fullname.split(".")[0] == "pandas":
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def arrow_without_pandas() -> None:
    """Let pyarrow find no pandas, so converting Python values never imports it.

    pyarrow looks for pandas on its first conversion of any Python value (`pa.array([1])`,
    `pa.scalar(0)`, `pc.fill_null(x, False)`), and remembers the answer; importing pandas cost
    `ingest cur` about 0.2 s and 50 MB of its whole process for nothing. An explicit conversion
    (`to_pandas()`) still imports pandas when asked.
    """
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(finder)


def _run(source: SpendSource, ctx: CliContext) -> int:
    from bot.ingest.ledger import ingest

    arrow_without_pandas()
    with progress.task(f"ingest {source.kind}") as bar, ctx.writing() as connection:
        report = ingest(
            source, session=connection, progress=bar, attribution=ctx.settings.attribution
        )
        hint = nothing_attributed_hint(report, reader=connection)
    print_report(report)
    if hint:
        print(hint)
    return 0 if report.reconciled else 1


def nothing_attributed_hint(report: IngestReport, *, reader: Reader) -> str | None:
    """Return what to do when an ingestion billed money but attributed none of it, else None."""
    from sqlalchemy import func, select

    from bot.db.tables import models

    if not report.totals or any(t.attributed or not t.billed for t in report.totals):
        return None
    if not reader.scalar(select(func.count()).select_from(models)):
        return (
            "hint: no models are registered, so all of it is unallocated. Describe your teams and "
            "models in a registry file (docs/ingestion.md, The registry), run: mlcost registry "
            "import registry.yaml, then ingest again (it replaces, never doubles)."
        )
    return (
        "hint: no row matched a registered model. See which tags the spend carries: mlcost "
        "report spend --month YYYY-MM --by model,tag,service; fix the registry's match rules or "
        "the tags, then ingest again (it replaces, never doubles)."
    )


def print_report(report: IngestReport) -> None:
    """Print what an ingestion read, its notes and one reconciliation line per currency."""
    print(
        f"{report.source} {report.location}"
        + (f" ({report.format})" if report.format else "")
        + f": read {counted(report.rows_read, 'row')}, wrote "
        f"{counted(report.rows_written, 'daily row')} (replaced {report.replaced_rows:,})"
        + (f", {counted(report.api_requests, 'API request')}" if report.api_requests else "")
    )
    for scope in report.scopes:
        print(
            f"  {scope.provider} {scope.billing_account} {scope.column} {scope.start}..{scope.end}"
        )
    for totals in report.totals:
        billed = format_money_places(totals.billed, totals.currency, 2)
        effective = format_money_places(totals.effective, totals.currency, 2)
        print(f"  billed {billed}, effective (amortised) {effective}")
    for note in report.notes:
        print(f"  note: {note}")
    print(report.reconciliation_line())
