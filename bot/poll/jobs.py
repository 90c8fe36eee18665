"""The poll's scheduled jobs: re-read the sources and alert, look for anomalies, retry delivery.

`poll_jobs` declares them; the composition root hands in what they use and the scheduler
(bot/notify/scheduler.py) runs them in the leader.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from bot.config import AttributionSettings, PollSettings
from bot.db.engine import session_scope
from bot.notify.delivery import DeliveryEdge
from bot.notify.schedule import DailyAt, Every, JobSpec
from bot.notify.sources import PolledSource, configured_sources
from bot.periods import local_today
from bot.poll.cycle import POLL_CHECKS, deliver_outbox, run_cycle
from bot.registry.stored import cost_explorer_tag_key

log = logging.getLogger(__name__)

Clock = Callable[[], dt.datetime]
AwsClientFactory = Callable[..., Any]


def poll_sources(
    *,
    session_factory: sessionmaker[Session],
    settings: PollSettings,
    attribution: AttributionSettings,
    aws: AwsClientFactory,
    today: dt.date,
) -> list[PolledSource]:
    """Return the sources MLCOST_POLL_SOURCES names, their AWS clients from `aws`.

    Cost Explorer groups by the registry's model tag key, as `mlcost ingest cost-explorer` does.
    """
    with session_scope(session_factory) as session:
        tag_key = cost_explorer_tag_key(session, settings=attribution)
    return configured_sources(settings, today, model_tag_key=tag_key, aws=aws)


def run_poll(
    *,
    session_factory: sessionmaker[Session],
    settings: PollSettings,
    attribution: AttributionSettings,
    clock: Clock,
    aws: AwsClientFactory,
    edge: DeliveryEdge,
) -> None:
    """Poll the sources; evaluate budgets and the weekly unallocated and waste posts; deliver."""
    now = clock()
    today = local_today(now, settings.timezone)
    report = run_cycle(
        session_factory=session_factory,
        settings=settings,
        now=now,
        sources=poll_sources(
            session_factory=session_factory,
            settings=settings,
            attribution=attribution,
            aws=aws,
            today=today,
        ),
        edge=edge,
        checks=POLL_CHECKS,
    )
    log.info(
        "poll cycle as of %s: %d budgets, %d alerts queued",
        report.as_of,
        report.budgets_evaluated,
        report.queued,
    )


def run_anomalies(
    *,
    session_factory: sessionmaker[Session],
    settings: PollSettings,
    clock: Clock,
    edge: DeliveryEdge,
) -> None:
    """Look for yesterday's spend and GPU-hour anomalies and deliver them."""
    report = run_cycle(
        session_factory=session_factory,
        settings=settings,
        now=clock(),
        edge=edge,
        checks=("anomalies",),
    )
    log.info("anomaly check for %s: %d alerts queued", report.as_of, report.queued)


def run_delivery(
    *,
    session_factory: sessionmaker[Session],
    settings: PollSettings,
    edge: DeliveryEdge,
) -> None:
    """Retry whatever the outbox still holds (Slack was rate limiting or down)."""
    deliver_outbox(session_factory=session_factory, settings=settings, edge=edge)


def describe_poll(settings: PollSettings) -> str:
    """Say what the first poll reads and evaluates, and how often it runs."""
    kinds = [kind for kind, _ in settings.poll_source_specs()]
    reads = "no MLCOST_POLL_SOURCES, so nothing re-read"
    if kinds:
        reads = f"re-reads {', '.join(kinds)}"
    return (
        f"poll ({reads}; budget alerts and the weekly unallocated and waste posts; "
        f"then every {settings.poll_interval_hours:g} h)"
    )


def describe_anomalies(settings: PollSettings, clock: Clock) -> str:
    """Say which day the first anomaly check looks at."""
    today = local_today(clock(), settings.timezone)
    return f"anomaly check of {today - dt.timedelta(days=1)}"


def poll_jobs(
    settings: PollSettings,
    *,
    attribution: AttributionSettings,
    session_factory: sessionmaker[Session],
    clock: Clock,
    aws: AwsClientFactory,
    edge: DeliveryEdge,
) -> list[JobSpec]:
    """Declare the poll, the outbox's retry and the daily anomaly check."""
    return [
        JobSpec(
            "poll",
            functools.partial(
                run_poll,
                session_factory=session_factory,
                settings=settings,
                attribution=attribution,
                clock=clock,
                aws=aws,
                edge=edge,
            ),
            Every(dt.timedelta(hours=settings.poll_interval_hours)),
            run_at_start=True,
            at_start=functools.partial(describe_poll, settings),
        ),
        JobSpec(
            "deliver",
            functools.partial(
                run_delivery, session_factory=session_factory, settings=settings, edge=edge
            ),
            Every(dt.timedelta(seconds=settings.delivery_interval_seconds)),
        ),
        JobSpec(
            "anomalies",
            functools.partial(
                run_anomalies,
                session_factory=session_factory,
                settings=settings,
                clock=clock,
                edge=edge,
            ),
            DailyAt(settings.anomaly_hour, 15, settings.timezone),
            run_at_start=True,
            at_start=functools.partial(describe_anomalies, settings, clock),
        ),
    ]
