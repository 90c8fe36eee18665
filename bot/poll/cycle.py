"""One poll-and-alert cycle: re-read spend, evaluate budgets, find anomalies, post each once.

The cycle records every alert in the outbox (keyed per budget, month and threshold, or per
anomaly and day) before anything is posted; delivery then sends what is pending. A dry run plans
the same alerts without writing anything.
"""

from __future__ import annotations

import datetime as dt
import logging
import traceback
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol

from sqlalchemy.orm import Session, sessionmaker

from bot import collector
from bot.config import AttributionSettings, DeliverySettings, PollSettings
from bot.db.engine import session_scope
from bot.errors import MlcostError
from bot.ingest.ledger import ingest
from bot.ingest.sources.base import Progress, SpendSource
from bot.notify.delivery import DeliveryEdge, DeliveryReport, deliver_pending, outbox_timing
from bot.notify.outbox import PlannedPost, enqueue_many
from bot.notify.source_health import clear_source_failure, record_source_failure, redact
from bot.notify.sources import ReadSource, read_side_by_side, source_name
from bot.periods import local_today
from bot.poll.plan import ALL_CHECKS, CycleReport, plan_alerts
from bot.registry.stored import load_attribution_rules

log = logging.getLogger(__name__)


# what the scheduler's poll evaluates after re-reading its sources; anomalies run once a day
POLL_CHECKS = ("budgets", "unallocated", "waste")


class StartTask(Protocol):
    """Open the progress of one step of a cycle (the CLI's `progress.task` draws a bar)."""

    def __call__(
        self, label: str, total: int | None = None
    ) -> AbstractContextManager[Progress]: ...


def _step(start: StartTask | None, label: str) -> AbstractContextManager[Progress | None]:
    return nullcontext() if start is None else start(label)


def default_as_of(now: dt.datetime, timezone: str) -> dt.date:
    """Return yesterday in the organisation's time zone: the last complete day of billing."""
    return local_today(now, timezone) - dt.timedelta(days=1)


def queue_posts(session: Session, posts: Iterable[PlannedPost]) -> int:
    """Record planned posts in the outbox; return how many were new."""
    with collector.paused():  # thousands of messages encoded at once (bot.collector)
        return len(enqueue_many(session, posts))


def fetch_sources(
    session_factory: sessionmaker[Session],
    sources: Sequence[SpendSource],
    report: CycleReport,
    *,
    now: dt.datetime | None = None,
    progress: StartTask | None = None,
    timeout: float | None = None,
    attribution: AttributionSettings | None = None,
) -> None:
    """Read the sources side by side, then write each to the ledger in its own transaction.

    Every source is read at once, in a thread of its own, and the poll waits at most `timeout`
    seconds for them all (MLCOST_POLL_SOURCE_TIMEOUT_SECONDS): a source still reading then is
    given up, so hung sources delay the alerts by one deadline in all. What arrived is written
    here, in this thread, in the sources' order. A failing source does not stop the cycle:
    whatever it raised is logged (with its traceback unless it is one of our own explained
    errors, credentials masked) and recorded for /healthz until it is next fetched.
    """
    if not sources:
        return
    at = now or dt.datetime.now(dt.UTC)
    with session_scope(session_factory) as session:
        tag_keys = load_attribution_rules(session, defaults=attribution).tag_keys_used()
    label = source_name(sources[0]) if len(sources) == 1 else f"{len(sources)} sources"
    with _step(progress, f"poll: read {label}") as bar:
        outcomes = read_side_by_side(sources, tag_keys, seconds=timeout, progress=bar)
    for source, outcome in zip(sources, outcomes, strict=True):
        name = source_name(source)
        try:
            if isinstance(outcome, BaseException):
                raise outcome
            with (
                _step(progress, f"poll: write {name}"),
                session_scope(session_factory) as session,
            ):
                report.fetched.append(
                    ingest(ReadSource(source, outcome), session=session, attribution=attribution)
                )
                clear_source_failure(session=session, source=name)
        except Exception as exc:
            if isinstance(exc, MlcostError):
                log.error("poll of %s failed: %s", name, redact(str(exc)))
                report.fetch_errors.append(redact(str(exc)))
            else:
                log.error(
                    "poll of %s failed (%s); the other sources go on\n%s",
                    name,
                    type(exc).__name__,
                    redact("".join(traceback.format_exception(exc)).rstrip()),
                )
                report.fetch_errors.append(f"{name}: {type(exc).__name__}: {redact(str(exc))}")
            _record_failure(session_factory, name, exc, at)


def _record_failure(
    session_factory: sessionmaker[Session], name: str, exc: Exception, now: dt.datetime
) -> None:
    try:
        with session_scope(session_factory) as session:
            record_source_failure(session=session, source=name, exc=exc, now=now)
    except Exception:
        log.exception("could not record the failure of %s for /healthz", name)


def run_cycle(
    *,
    session_factory: sessionmaker[Session],
    settings: PollSettings,
    now: dt.datetime,
    as_of: dt.date | None = None,
    sources: Sequence[SpendSource] = (),
    edge: DeliveryEdge | None = None,
    checks: Sequence[str] = ALL_CHECKS,
    dry_run: bool = False,
    progress: StartTask | None = None,
) -> CycleReport:
    """Fetch sources, plan and queue every alert due as of a day, then deliver what is pending.

    Delivery leases by the database's clock, read as it claims each message (fetching may take
    minutes, and this host's clock may be off); without an `edge` nothing is delivered.
    `progress` is shown each source's read and each step.
    """
    day = as_of or default_as_of(now, settings.timezone)
    fetched = CycleReport(as_of=day)
    if not dry_run:
        fetch_sources(
            session_factory,
            sources,
            fetched,
            now=now,
            progress=progress,
            timeout=settings.poll_source_timeout_seconds,
            attribution=settings,
        )
    with (
        _step(progress, f"poll: check {', '.join(checks)} as of {day}"),
        session_scope(session_factory) as session,
    ):
        report = plan_alerts(session=session, settings=settings, as_of=day, now=now, checks=checks)
        if not dry_run:
            report.queued = queue_posts(session, report.planned)
    report.fetched, report.fetch_errors = fetched.fetched, fetched.fetch_errors
    if edge is not None and not dry_run:
        with _step(progress, "poll: deliver the outbox"):
            report.delivery = deliver_outbox(
                session_factory=session_factory, settings=settings, edge=edge
            )
    return report


def deliver_outbox(
    *,
    session_factory: sessionmaker[Session],
    settings: DeliverySettings,
    edge: DeliveryEdge,
    now: dt.datetime | None = None,
) -> DeliveryReport:
    """Deliver every pending outbox message that is due (by the database's clock, or at `now`)."""
    return deliver_pending(
        session_factory=session_factory, edge=edge, now=now, timing=outbox_timing(settings)
    )
