"""The scheduler: explicit job specs, registered on an APScheduler 3 BackgroundScheduler that
runs in exactly one process, the leader.

APScheduler 3 cannot share a job store between processes, so jobs live in memory in the leader
only; bot/notify/leader.py elects it. The outbox makes a brief overlap harmless.

Other features add jobs by appending a provider to JOB_PROVIDERS: a function from Settings to a
list of JobSpec.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy import Engine

from bot.bootstrap import AppServices
from bot.config import Settings
from bot.notify.cycle import POLL_CHECKS, deliver_outbox, run_cycle
from bot.notify.leader import LeaderElection, leader_lock_for
from bot.notify.sources import PolledSource, configured_sources
from bot.periods import local_today
from bot.registry.sync import cost_explorer_tag_key

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobSpec:
    """A scheduled job: what runs, when, and whether it also runs as soon as a leader starts."""

    id: str
    run: Callable[[AppServices], object]
    trigger: BaseTrigger
    run_at_start: bool = False


def poll_sources(services: AppServices, today: dt.date) -> list[PolledSource]:
    """Return the sources MLCOST_POLL_SOURCES names, their AWS clients from the services.

    Cost Explorer groups by the registry's model tag key, as `mlcost ingest cost-explorer` does.
    """
    with services.unit_of_work() as session:
        tag_key = cost_explorer_tag_key(session=session, settings=services.settings)
    return configured_sources(services.settings, today, model_tag_key=tag_key, aws=services.aws)


def run_poll(services: AppServices) -> None:
    """Poll the sources; evaluate budgets and the weekly unallocated and waste posts; deliver."""
    now = services.clock()
    report = run_cycle(
        session_factory=services.session_factory,
        settings=services.settings,
        now=now,
        sources=poll_sources(services, local_today(now, services.settings.timezone)),
        notifier=services.notifier,
        find_posted=services.find_posted,
        checks=POLL_CHECKS,
    )
    log.info(
        "poll cycle as of %s: %d budgets, %d alerts queued",
        report.as_of,
        report.budgets_evaluated,
        report.queued,
    )


def run_anomalies(services: AppServices) -> None:
    """Look for yesterday's spend and GPU-hour anomalies and deliver them."""
    report = run_cycle(
        session_factory=services.session_factory,
        settings=services.settings,
        now=services.clock(),
        notifier=services.notifier,
        find_posted=services.find_posted,
        checks=("anomalies",),
    )
    log.info("anomaly check for %s: %d alerts queued", report.as_of, report.queued)


def run_delivery(services: AppServices) -> None:
    """Retry whatever the outbox still holds (Slack was rate limiting or down)."""
    deliver_outbox(
        session_factory=services.session_factory,
        settings=services.settings,
        notifier=services.notifier,
        find_posted=services.find_posted,
    )


def daily_job(
    job_id: str,
    run: Callable[[AppServices], object],
    settings: Settings,
    hour: int,
    minute: int,
    *,
    run_at_start: bool = False,
) -> JobSpec:
    """Return a job that runs every day at hour:minute in MLCOST_TIMEZONE."""
    trigger = CronTrigger(hour=hour, minute=minute, timezone=settings.timezone)
    return JobSpec(job_id, run, trigger, run_at_start=run_at_start)


def alert_job_specs(settings: Settings) -> list[JobSpec]:
    """Return the budgets-and-alerts jobs."""
    return [
        JobSpec(
            "poll", run_poll, IntervalTrigger(hours=settings.poll_interval_hours), run_at_start=True
        ),
        JobSpec(
            "deliver", run_delivery, IntervalTrigger(seconds=settings.delivery_interval_seconds)
        ),
        daily_job(
            "anomalies", run_anomalies, settings, settings.anomaly_hour, 15, run_at_start=True
        ),
    ]


def review_job_specs(settings: Settings) -> list[JobSpec]:
    """Return the review and sign-off jobs; each decides for itself whether today is its day."""
    from bot.review.jobs import (
        run_monthly_review_job,
        run_review_refresh_job,
        run_review_reminders_job,
        run_weekly_signoff_job,
    )

    return [
        daily_job("monthly-review", run_monthly_review_job, settings, 9, 0, run_at_start=True),
        daily_job("review-reminders", run_review_reminders_job, settings, 10, 0),
        daily_job("weekly-signoff", run_weekly_signoff_job, settings, 9, 30, run_at_start=True),
        JobSpec(
            "review-refresh",
            run_review_refresh_job,
            IntervalTrigger(seconds=settings.delivery_interval_seconds),
        ),
    ]


def resource_scan_job_specs(settings: Settings) -> list[JobSpec]:
    """Return the daily resource scan when regions are set, and the retry of Stop it actions a
    dead process left claimed when findings are scanned or actions enabled."""
    from bot.waste.jobs import run_resource_scan_job
    from bot.waste.stopping import STOP_RETRY_MINUTES, resume_stale_stops

    jobs = []
    if settings.scan_regions:
        jobs.append(
            daily_job("resource-scan", run_resource_scan_job, settings, settings.scan_hour, 30)
        )
    if settings.scan_regions or settings.actions_enabled:
        retry = IntervalTrigger(minutes=STOP_RETRY_MINUTES)
        jobs.append(JobSpec("resource-stop-retry", resume_stale_stops, retry))
    return jobs


JOB_PROVIDERS: list[Callable[[Settings], list[JobSpec]]] = [
    alert_job_specs,
    review_job_specs,
    resource_scan_job_specs,
]


def job_specs(settings: Settings) -> list[JobSpec]:
    """Return every job of every feature."""
    return [spec for provider in JOB_PROVIDERS for spec in provider(settings)]


def build_scheduler(settings: Settings) -> BackgroundScheduler:
    """Create (not start) the scheduler: one run at a time per job, missed runs coalesced."""
    return BackgroundScheduler(
        timezone=settings.timezone,
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 3600},
    )


def register_jobs(
    scheduler: BackgroundScheduler,
    services: AppServices,
    specs: list[JobSpec],
    still_leader: Callable[[], bool] = lambda: True,
) -> None:
    """Add each job; a job first checks this process still leads, and logs its own failure."""
    for spec in specs:

        def job(spec: JobSpec = spec) -> None:
            if not still_leader():
                log.warning("skipping job %s: this process is no longer the leader", spec.id)
                return
            try:
                spec.run(services)
            except Exception:
                log.exception("scheduled job %s failed; it runs again on schedule", spec.id)

        extra: dict[str, Any] = {}
        if spec.run_at_start:
            extra["next_run_time"] = dt.datetime.now(dt.UTC)
        scheduler.add_job(
            job, trigger=spec.trigger, id=spec.id, name=spec.id, replace_existing=True, **extra
        )


def start_leader_scheduler(services: AppServices, engine: Engine) -> LeaderElection:
    """Run the scheduler in whichever process wins the leader lock; return the election.

    The first round runs before this returns, so `is_leader` says at once whether this
    process leads; `stop()` stops the scheduler and releases the lock.
    """
    lock = leader_lock_for(engine)

    def elected() -> Callable[[], None]:
        scheduler = build_scheduler(services.settings)
        register_jobs(scheduler, services, job_specs(services.settings), lock.is_held)
        scheduler.start()
        return lambda: scheduler.shutdown(wait=False)

    election = LeaderElection(lock, elected, services.settings.leader_check_seconds)
    election.step()
    return election.start()
