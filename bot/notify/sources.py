"""The spend sources a scheduled poll re-reads (MLCOST_POLL_SOURCES)."""

from __future__ import annotations

import datetime as dt
import functools
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from bot.config import PollSettings
from bot.errors import AwsUnavailable, MlcostError
from bot.ingest.sources.base import Progress, SourceData, SpendSource
from bot.ingest.sources.registry import (
    AwsClientFactory,
    SourceContext,
    billing_sources,
    pollable,
)
from bot.masking import mask_url

_REDRAW_SECONDS = 0.1  # how often the read's progress is counted while waiting


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


class ReadSource:
    """A source whose read is done: `read` hands back its data, for the ledger to write."""

    def __init__(self, source: SpendSource, data: SourceData) -> None:
        self.kind = source.kind
        self.location = source.location
        self._data = data

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        """Return the data read before."""
        return self._data


class _Tally:
    """Counts one source's thread reports (set only by that thread, summed by the poll's)."""

    def __init__(self) -> None:
        self.rows = 0

    def set_total(self, total: int | None, unit: str | None = None) -> None:
        return

    def advance(self, done: int = 0, rows: int = 0) -> None:
        self.rows += rows


def read_side_by_side(
    sources: Sequence[SpendSource],
    tag_keys: set[str],
    *,
    seconds: float | None,
    progress: Progress | None = None,
) -> list[SourceData | BaseException]:
    """Read every source at once, each in a thread of its own, and wait at most `seconds` in all.

    Returns each source's data, or what its read raised, in the sources' order; a source still
    reading at the deadline gets SourceDeadlineExceeded. So hung sources cost the poll one
    deadline however many there are. An abandoned thread is a daemon that holds no database
    session (it runs only the source's `read`): its late answer is never picked up or written.
    `progress` counts the sources done and the rows they read.
    """
    finished: queue.SimpleQueue[tuple[int, SourceData | BaseException]] = queue.SimpleQueue()
    tallies = [_Tally() for _ in sources]

    def run(index: int, source: SpendSource) -> None:
        try:
            outcome: SourceData | BaseException = source.read(tag_keys, tallies[index])
        except BaseException as exc:  # handed to the waiting thread, which reports it
            outcome = exc
        finished.put((index, outcome))

    deadline = None if seconds is None else time.monotonic() + seconds
    if progress is not None:
        progress.set_total(len(sources), "sources")
    for index, source in enumerate(sources):
        name = source_name(source)
        threading.Thread(target=run, args=(index, source), name=f"read {name}", daemon=True).start()
    received: dict[int, SourceData | BaseException] = {}
    counted_rows = 0
    while len(received) < len(sources):
        wait = None if deadline is None else deadline - time.monotonic()
        if wait is not None and wait <= 0:
            break
        if progress is not None:
            wait = _REDRAW_SECONDS if wait is None else min(wait, _REDRAW_SECONDS)
        try:
            index, outcome = finished.get(timeout=wait)
            received[index] = outcome
        except queue.Empty:
            index = -1
        if progress is not None:
            rows = sum(t.rows for t in tallies)
            progress.advance(1 if index >= 0 else 0, rows=rows - counted_rows)
            counted_rows = rows
    return [
        received[index] if index in received else _deadline_exceeded(source, seconds)
        for index, source in enumerate(sources)
    ]


def _deadline_exceeded(source: SpendSource, seconds: float | None) -> SourceDeadlineExceeded:
    return SourceDeadlineExceeded(
        f"{source_name(source)}: did not finish within {seconds or 0:g} s "
        "(MLCOST_POLL_SOURCE_TIMEOUT_SECONDS); planned from what the ledger holds"
    )


def source_name(source: SpendSource) -> str:
    """Return the name a source's failures are recorded under."""
    return source.name if isinstance(source, PolledSource) else source.location


def configured_sources(
    settings: PollSettings,
    today: dt.date,
    *,
    model_tag_key: str,
    aws: AwsClientFactory | None = None,
    ce_client: Any = None,
    s3_client: Any = None,
) -> list[PolledSource]:
    """Return the sources a scheduled poll re-reads (MLCOST_POLL_SOURCES).

    Each entry names a pollable billing source (bot/ingest/sources/registry.py), which builds
    it: Cost Explorer and OpenCost re-read their trailing window of days; a CUR or FOCUS export
    in S3 (or a folder) re-reads its previous and current billing periods. Cost Explorer groups
    by `model_tag_key` (registry.stored.cost_explorer_tag_key decides it). AWS clients come from
    `aws` when the source is built (at fetch time) unless one is given.
    """
    context = SourceContext(
        settings=settings,
        aws=_clients(aws, ce=ce_client, s3=s3_client),
        today=lambda: today,
        model_tag_key=lambda: model_tag_key,
    )
    sources: list[PolledSource] = []
    for kind, location in settings.poll_source_specs():
        source = pollable(kind, location)
        if source is None or source.poll is None:
            examples = sorted(s.poll_example() for s in billing_sources() if s.poll is not None)
            raise MlcostError(
                f"MLCOST_POLL_SOURCES: cannot poll {kind + (':' + location if location else '')!r};"
                f" use {', '.join(examples[:-1])} or {examples[-1]}"
            )
        # the source's name is shown in logs, /healthz and messages: no credential in it
        name = source.name if location is None else f"{source.name}:{mask_url(location)}"
        build = functools.partial(source.poll.build, location, context)
        sources.append(PolledSource(name, source.name, build))
    return sources


def _clients(aws: AwsClientFactory | None, **given: Any) -> AwsClientFactory:
    """Return an AWS client factory that hands out the clients given (by service) first."""

    def client(service: str, region: str | None = None) -> Any:
        if given.get(service) is not None:
            return given[service]
        if aws is None:
            raise AwsUnavailable(f"{service}: no AWS client factory was given to the poll")
        return aws(service, region)

    return client
