"""The spend sources a scheduled poll re-reads (MLCOST_POLL_SOURCES)."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from typing import Any

from bot.bootstrap import AwsClientFactory, aws_client
from bot.config import Settings
from bot.errors import MlcostError
from bot.ingest.sources.base import Progress, SourceData, SpendSource
from bot.ingest.sources.exports import EXPORT_KINDS, RecentExportSource, recent_periods
from bot.ingest.sources.files import is_s3
from bot.masking import mask_url


class PolledSource:
    """A configured poll source, named by its MLCOST_POLL_SOURCES entry (stable across polls).

    Building the real source can fail (no AWS region, say); that error is raised when the
    source is read, so it fails this source's fetch and not the whole poll.
    """

    def __init__(self, name: str, kind: str, build: Callable[[], SpendSource]) -> None:
        self.name = name
        self.kind = kind
        self.location = name
        self._source: SpendSource | Exception
        try:
            self._source = build()
            self.location = self._source.location
        except Exception as exc:
            self._source = exc

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        """Read the source (or raise why it could not be built)."""
        if isinstance(self._source, Exception):
            raise self._source
        return self._source.read(tag_keys, progress)


class SourceDeadlineExceeded(MlcostError):
    """A poll source's read did not finish within MLCOST_POLL_SOURCE_TIMEOUT_SECONDS."""


class DeadlineSource:
    """Read a source in a thread of its own and give up waiting at a deadline.

    A hung read (a server that never answers, a stuck SDK call) then fails its source alone,
    and the poll plans from what the ledger holds. The abandoned thread holds no database
    session (only `read` runs in it) and is a daemon: its late answer is dropped.
    """

    def __init__(self, source: SpendSource, seconds: float) -> None:
        self.source = source
        self.seconds = seconds
        self.kind = source.kind
        self.location = source.location

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        """Return the source's read, or raise SourceDeadlineExceeded at the deadline."""
        outcome: list[SourceData | BaseException] = []

        def run() -> None:
            try:
                outcome.append(self.source.read(tag_keys, progress))
            except BaseException as exc:  # handed to the waiting thread, which raises it
                outcome.append(exc)

        name = source_name(self.source)
        thread = threading.Thread(target=run, name=f"read {name}", daemon=True)
        thread.start()
        thread.join(self.seconds)
        if not outcome:
            raise SourceDeadlineExceeded(
                f"{name}: did not finish within {self.seconds:g} s "
                "(MLCOST_POLL_SOURCE_TIMEOUT_SECONDS); planned from what the ledger holds"
            )
        [result] = outcome
        if isinstance(result, BaseException):
            raise result
        return result


def source_name(source: SpendSource) -> str:
    """Return the name a source's failures are recorded under."""
    return source.name if isinstance(source, PolledSource) else source.location


def configured_sources(
    settings: Settings,
    today: dt.date,
    *,
    model_tag_key: str,
    aws: AwsClientFactory = aws_client,
    ce_client: Any = None,
    s3_client: Any = None,
) -> list[PolledSource]:
    """Return the sources a scheduled poll re-reads (MLCOST_POLL_SOURCES).

    Cost Explorer and OpenCost re-read their trailing window of days; a CUR or FOCUS export in
    S3 (or a folder) re-reads its previous and current billing periods. Cost Explorer groups by
    `model_tag_key` (registry.sync.cost_explorer_tag_key decides it). AWS clients come from
    `aws` when the source is built (at fetch time) unless one is given.
    """
    sources: list[PolledSource] = []
    for kind, location in settings.poll_source_specs():
        if kind in ("cost-explorer", "ce") and location is None:

            def build_ce() -> SpendSource:
                from bot.ingest.sources.cost_explorer import CE_REGION, CostExplorerSource

                return CostExplorerSource(
                    ce_client or aws("ce", CE_REGION),
                    today - dt.timedelta(days=settings.poll_lookback_days),
                    today,
                    model_tag_key=model_tag_key,
                    second_group=settings.cost_explorer_group_key,
                    billing_account=settings.aws_billing_account or "aws",
                    default_currency=settings.currency,
                )

            sources.append(PolledSource("cost-explorer", "cost-explorer", build_ce))
        elif kind in EXPORT_KINDS and location:

            def build_export(kind: str = kind, location: str = location) -> SpendSource:
                return RecentExportSource(
                    kind,
                    location,
                    recent_periods(today),
                    s3_client=s3_client or (aws("s3") if is_s3(location) else None),
                    default_currency=settings.currency,
                )

            sources.append(PolledSource(f"{kind}:{location}", kind, build_export))
        elif kind == "opencost" and location:

            def build_opencost(location: str = location) -> SpendSource:
                from bot.ingest.sources.opencost import OpenCostSource, opencost_window

                start = today - dt.timedelta(days=settings.poll_lookback_days)
                return OpenCostSource(
                    location,
                    window=opencost_window(start, today),
                    default_currency=settings.currency,
                    timeout=settings.opencost_timeout_seconds,
                    max_bytes=settings.opencost_max_bytes,
                )

            # the source's name is shown in logs, /healthz and messages: no credential in it
            name = f"opencost:{mask_url(location)}"
            sources.append(PolledSource(name, "opencost", build_opencost))
        else:
            raise MlcostError(
                f"MLCOST_POLL_SOURCES: cannot poll {kind + (':' + location if location else '')!r};"
                " use cost-explorer, cur:s3://bucket/prefix/, focus:s3://bucket/prefix/"
                " or opencost:http://opencost:9003"
            )
    return sources
