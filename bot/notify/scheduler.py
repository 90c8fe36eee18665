"""The scheduler: explicit job specs, registered on an APScheduler 3 BackgroundScheduler that
runs in exactly one process, the leader.

APScheduler 3 cannot share a job store between processes, so jobs live in memory in the leader
only. With PostgreSQL the leader holds a session-level advisory lock on a dedicated autocommit
connection; the other replicas retry every few seconds and take over when the leader dies (its
connection closes and PostgreSQL frees the lock). With SQLite a file lock beside the database
keeps a second scheduler from starting. The outbox makes a brief overlap harmless.

Other features add jobs by appending a provider to JOB_PROVIDERS: a function from Settings to a
list of JobSpec.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from filelock import FileLock, Timeout
from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.engine import URL
from sqlalchemy.pool import NullPool

from bot.bootstrap import AppServices
from bot.config import Settings
from bot.notify.cycle import (
    POLL_CHECKS,
    PolledSource,
    configured_sources,
    deliver_outbox,
    run_cycle,
)
from bot.periods import local_today
from bot.registry.sync import cost_explorer_tag_key

log = logging.getLogger(__name__)

# pg_try_advisory_lock takes a bigint: a stable one derived from the application's name.
LEADER_LOCK_KEY = int.from_bytes(
    hashlib.sha256(b"mlcost:scheduler").digest()[:8], "big", signed=True
)


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
        clock=services.clock,  # ingesting takes time: lease from the clock at claim time
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
        clock=services.clock,
    )
    log.info("anomaly check for %s: %d alerts queued", report.as_of, report.queued)


def run_delivery(services: AppServices) -> None:
    """Retry whatever the outbox still holds (Slack was rate limiting or down)."""
    deliver_outbox(
        session_factory=services.session_factory,
        settings=services.settings,
        notifier=services.notifier,
        clock=services.clock,
        find_posted=services.find_posted,
    )


def alert_job_specs(settings: Settings) -> list[JobSpec]:
    """Return the budgets-and-alerts jobs."""
    return [
        JobSpec(
            "poll", run_poll, IntervalTrigger(hours=settings.poll_interval_hours), run_at_start=True
        ),
        JobSpec(
            "deliver", run_delivery, IntervalTrigger(seconds=settings.delivery_interval_seconds)
        ),
        JobSpec(
            "anomalies",
            run_anomalies,
            CronTrigger(hour=settings.anomaly_hour, minute=15, timezone=settings.timezone),
            run_at_start=True,
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

    daily = {"timezone": settings.timezone}
    return [
        JobSpec(
            "monthly-review",
            run_monthly_review_job,
            CronTrigger(hour=9, minute=0, **daily),
            run_at_start=True,
        ),
        JobSpec(
            "review-reminders", run_review_reminders_job, CronTrigger(hour=10, minute=0, **daily)
        ),
        JobSpec(
            "weekly-signoff",
            run_weekly_signoff_job,
            CronTrigger(hour=9, minute=30, **daily),
            run_at_start=True,
        ),
        JobSpec(
            "review-refresh",
            run_review_refresh_job,
            IntervalTrigger(seconds=settings.delivery_interval_seconds),
        ),
    ]


JOB_PROVIDERS: list[Callable[[Settings], list[JobSpec]]] = [alert_job_specs, review_job_specs]


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


class LeaderLock(Protocol):
    """Mutual exclusion between processes that may each run the scheduler."""

    def try_acquire(self) -> bool: ...

    def is_held(self) -> bool: ...

    def release(self) -> None: ...


class PostgresAdvisoryLock:
    """A session-level advisory lock on a dedicated autocommit connection."""

    def __init__(self, url: URL | str, key: int = LEADER_LOCK_KEY) -> None:
        self.key = key
        self._engine = create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
        self._connection: Connection | None = None
        self._held = False
        self._lock = threading.Lock()

    def try_acquire(self) -> bool:
        """Take the lock if it is free; never blocks."""
        with self._lock:
            try:
                if self._connection is None:
                    self._connection = self._engine.connect()
                got = self._connection.execute(
                    text("SELECT pg_try_advisory_lock(:key)"), {"key": self.key}
                ).scalar()
            except Exception as exc:
                log.warning("leader lock: database unreachable (%s)", type(exc).__name__)
                self._drop()
                return False
            self._held = bool(got)
            return self._held

    def is_held(self) -> bool:
        """Return whether the lock's connection is alive (a live session keeps its lock)."""
        with self._lock:
            if not self._held or self._connection is None:
                return False
            try:
                self._connection.execute(text("SELECT 1"))
            except Exception as exc:
                log.warning("leader lock: connection lost (%s)", type(exc).__name__)
                self._drop()
                return False
            return True

    def release(self) -> None:
        """Release the lock and close the connection."""
        with self._lock:
            if self._held and self._connection is not None:
                try:
                    self._connection.execute(
                        text("SELECT pg_advisory_unlock(:key)"), {"key": self.key}
                    )
                except Exception:
                    log.debug("leader lock: unlock failed; closing the connection frees it")
            self._drop()
        self._engine.dispose()

    def _drop(self) -> None:
        self._held = False
        if self._connection is not None:
            try:
                self._connection.close()
            except Exception:
                log.debug("leader lock: closing a broken connection failed")
            self._connection = None


class FileLeaderLock:
    """A lock file beside the SQLite database: one scheduler per database file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # thread_local=False: jobs run on executor threads and must see the lock this process holds
        self._lock = FileLock(str(path), thread_local=False)

    def try_acquire(self) -> bool:
        """Take the lock if no other process holds it; never blocks."""
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            return False
        return True

    def is_held(self) -> bool:
        return self._lock.is_locked

    def release(self) -> None:
        if self._lock.is_locked:
            self._lock.release(force=True)


def leader_lock_for(engine: Engine) -> LeaderLock:
    """Return the right lock for the database: advisory lock on PostgreSQL, file lock on SQLite."""
    url = engine.url
    if url.get_backend_name() == "postgresql":
        return PostgresAdvisoryLock(url)
    database = url.database
    if not database or database == ":memory:":
        path = Path(tempfile.gettempdir()) / f"mlcost-memory-{id(engine)}.scheduler.lock"
    else:
        path = Path(database).resolve().with_name(Path(database).name + ".scheduler.lock")
    return FileLeaderLock(path)


class LeaderElection:
    """Try to lead every few seconds; start the scheduler on winning, stop it on losing."""

    def __init__(
        self, lock: LeaderLock, on_elected: Callable[[], Callable[[], None]], interval: float
    ) -> None:
        self.lock = lock
        self.on_elected = on_elected
        self.interval = interval
        self.is_leader = False
        self._stop_scheduler: Callable[[], None] | None = None
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="leader-election", daemon=True)

    def start(self) -> LeaderElection:
        self._thread.start()
        return self

    def step(self) -> None:
        """Run one round: try to become leader, or check the lead is still held."""
        if not self.is_leader:
            if self.lock.try_acquire():
                self.is_leader = True
                log.info("elected scheduler leader: this process runs the scheduled jobs")
                self._stop_scheduler = self.on_elected()
            return
        if not self.lock.is_held():
            log.warning("lost the scheduler lead; stopping the scheduler, serving Slack only")
            self._demote()

    def _demote(self) -> None:
        self.is_leader = False
        if self._stop_scheduler is not None:
            self._stop_scheduler()
            self._stop_scheduler = None

    def _loop(self) -> None:
        announced = False
        while not self._stopped.is_set():
            try:
                self.step()
            except Exception:
                log.exception("leader election round failed")
            if not self.is_leader and not announced:
                log.info("another process runs the scheduler; this one serves Slack and stands by")
                announced = True
            self._stopped.wait(self.interval)

    def stop(self) -> None:
        """Stop electing, stop the scheduler if this process leads, and release the lock."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.interval + 5)
        self._demote()
        self.lock.release()


def start_leader_scheduler(services: AppServices, engine: Engine) -> Callable[[], None]:
    """Run the scheduler in whichever process wins the leader lock; return a stop function."""
    lock = leader_lock_for(engine)

    def elected() -> Callable[[], None]:
        scheduler = build_scheduler(services.settings)
        register_jobs(scheduler, services, job_specs(services.settings), lock.is_held)
        scheduler.start()
        return lambda: scheduler.shutdown(wait=False)

    election = LeaderElection(lock, elected, services.settings.leader_check_seconds).start()
    return election.stop
