"""The scheduler: the domains' declared jobs, registered on an APScheduler 3 BackgroundScheduler
that runs in exactly one process, the leader.

APScheduler 3 cannot share a job store between processes, so jobs live in memory in the leader
only; bot/notify/leader.py elects it. The outbox makes a brief overlap harmless.

Each domain declares its jobs (a list of `JobSpec`, bot/notify/schedule.py) with their dependencies
bound; the composition root collects them (`bot.bootstrap.scheduled_jobs`) and hands them here.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy import Engine

from bot.config import DeliverySettings, LedgerSettings
from bot.notify.leader import LeaderElection, leader_lock_for
from bot.notify.schedule import DailyAt, JobSpec, Schedule

log = logging.getLogger(__name__)


def trigger_for(schedule: Schedule) -> BaseTrigger:
    """Return the APScheduler trigger for a declared schedule."""
    if isinstance(schedule, DailyAt):
        return CronTrigger(hour=schedule.hour, minute=schedule.minute, timezone=schedule.timezone)
    return IntervalTrigger(seconds=schedule.interval.total_seconds())


def describe_first_runs(specs: Sequence[JobSpec]) -> str:
    """Say what a leader starting now runs at once, in the order the jobs are registered."""
    return ", ".join(
        spec.at_start() if spec.at_start else spec.id for spec in specs if spec.run_at_start
    )


def build_scheduler(settings: LedgerSettings) -> BackgroundScheduler:
    """Create (not start) the scheduler in the organisation's time zone: one run at a time per
    job, missed runs coalesced."""
    return BackgroundScheduler(
        timezone=settings.timezone,
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 3600},
    )


def register_jobs(
    scheduler: BackgroundScheduler,
    specs: Sequence[JobSpec],
    still_leader: Callable[[], bool] = lambda: True,
) -> None:
    """Add each job; a job first checks this process still leads, and logs its own failure."""
    for spec in specs:

        def job(spec: JobSpec = spec) -> None:
            if not still_leader():
                log.warning("skipping job %s: this process is no longer the leader", spec.id)
                return
            try:
                spec.run()
            except Exception:
                log.exception("scheduled job %s failed; it runs again on schedule", spec.id)

        extra: dict[str, Any] = {}
        if spec.run_at_start:
            extra["next_run_time"] = dt.datetime.now(dt.UTC)
        scheduler.add_job(
            job,
            trigger=trigger_for(spec.schedule),
            id=spec.id,
            name=spec.id,
            replace_existing=True,
            **extra,
        )


def start_leader_scheduler(
    specs: Sequence[JobSpec],
    engine: Engine,
    *,
    ledger: LedgerSettings,
    delivery: DeliverySettings,
) -> LeaderElection:
    """Run the jobs in whichever process wins the leader lock; return the election.

    The first round runs before this returns, so `is_leader` says at once whether this
    process leads; `stop()` stops the scheduler and releases the lock.
    """
    lock = leader_lock_for(engine)

    def elected() -> Callable[[], None]:
        scheduler = build_scheduler(ledger)
        register_jobs(scheduler, specs, lock.is_held)
        scheduler.start()
        return lambda: scheduler.shutdown(wait=False)

    election = LeaderElection(lock, elected, delivery.leader_check_seconds)
    election.step()
    return election.start()
