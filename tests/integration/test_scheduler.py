"""The scheduler: explicit jobs, one leader per database, takeover when the leader dies."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import text

from bot.bootstrap import AppServices, scheduled_jobs
from bot.config import Settings
from bot.db.engine import make_engine, session_scope
from bot.notify.leader import (
    FileLeaderLock,
    LeaderElection,
    PostgresAdvisoryLock,
    leader_lock_for,
)
from bot.notify.scheduler import build_scheduler, register_jobs
from tests.conftest import PG_ENV
from tests.support.alert_walk import add_spend, spend_row
from tests.support.database import migrated
from tests.support.fake_slack import FakeSlack

ROOT = Path(__file__).resolve().parents[2]
needs_pg = pytest.mark.skipif(not os.environ.get(PG_ENV), reason="needs PostgreSQL")


def test_jobs_are_registered_explicitly(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'x.db'}")
    scheduler = build_scheduler(settings)
    assert scheduler.get_jobs() == []
    services = AppServices(settings=settings, session_factory=None, client=None)  # type: ignore[arg-type]
    register_jobs(scheduler, scheduled_jobs(services))
    jobs = {job.id: job for job in scheduler.get_jobs()}
    assert set(jobs) == {
        "poll",
        "deliver",
        "anomalies",
        "monthly-review",
        "review-reminders",
        "weekly-signoff",
        "review-refresh",
    }
    assert str(jobs["poll"].trigger) == "interval[6:00:00]"
    assert not scheduler.running


def test_sqlite_file_lock_lets_one_scheduler_run_and_another_take_over(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'mlcost.db'}")
    first, second = leader_lock_for(engine), leader_lock_for(engine)
    assert isinstance(first, FileLeaderLock)
    assert first.path == tmp_path / "mlcost.db.scheduler.lock"
    started: list[str] = []

    def elected(name: str):  # type: ignore[no-untyped-def]
        def start():  # type: ignore[no-untyped-def]
            started.append(name)
            return lambda: started.append(f"{name} stopped")

        return start

    a = LeaderElection(first, elected("a"), 0.05)
    b = LeaderElection(second, elected("b"), 0.05)
    a.step()
    b.step()
    assert (a.is_leader, b.is_leader, started) == (True, False, ["a"])
    a.stop()
    b.step()
    assert b.is_leader and started == ["a", "a stopped", "b"]
    b.stop()


@needs_pg
def test_advisory_lock_is_freed_when_the_leader_connection_dies(database_url: str) -> None:
    first, second = PostgresAdvisoryLock(database_url), PostgresAdvisoryLock(database_url)
    try:
        assert first.try_acquire() and not second.try_acquire()
        assert first.is_held()
        engine = make_engine(database_url)
        # the leader's connection is killed; only in this test's database, never another run's
        with engine.connect() as conn:
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'"
                    " AND pid <> pg_backend_pid() AND database = (SELECT oid FROM pg_database"
                    " WHERE datname = current_database())"
                )
            )
        engine.dispose()
        assert not first.is_held()
        assert second.try_acquire()
    finally:
        first.release()
        second.release()


REGISTRY_HEAD = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
"""


def _registry(models: int) -> str:
    lines = [REGISTRY_HEAD, "models:"]
    lines += [f"  - {{name: m{i:02d}, team: ranking, owners: [U0AAA111]}}" for i in range(models)]
    lines.append("budgets:")
    lines += [
        f'  - {{scope: "model:m{i:02d}", monthly: 100, thresholds: [80, 100]}}'
        for i in range(models)
    ]
    return "\n".join(lines) + "\n"


class Replica:
    """One `mlcost serve` process, its log collected in the background."""

    def __init__(self, name: str, env: dict[str, str]) -> None:
        self.name = name
        self.lines: list[tuple[float, str]] = []
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bot.cli",
                "serve",
                "--http",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append((time.monotonic(), line.rstrip()))

    def elected_at(self) -> float | None:
        return next((t for t, line in self.lines if "elected scheduler leader" in line), None)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _wait(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@needs_pg
@pytest.mark.xdist_group("serve")  # two serve processes on timers: with the chaos tests, one worker
def test_two_replicas_post_every_alert_once_and_the_survivor_takes_over(
    database_url: str,
) -> None:
    from bot.registry.spec import parse_registry
    from bot.registry.sync import import_registry

    models = 24
    yesterday = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
    fake = FakeSlack().start()
    fake.delays["chat.postMessage"] = 0.15  # a post is in flight most of the time
    replicas: list[Replica] = []
    try:
        with migrated(database_url) as (_engine, factory):
            with session_scope(factory) as session:
                import_registry(parse_registry(_registry(models)), session=session, actor="t")
                add_spend(
                    session,
                    [
                        spend_row(yesterday, f"m{i:02d}", "serving", "ranking", "85")
                        for i in range(8)
                    ],
                )
            env = {
                **os.environ,
                "PYTHONPATH": str(ROOT),
                "MLCOST_DATABASE_URL": database_url,
                "SLACK_BOT_TOKEN": "xoxb-test",
                "SLACK_SIGNING_SECRET": "s",
                "SLACK_API_URL": fake.url,
                "MLCOST_POLL_INTERVAL_HOURS": str(0.4 / 3600),
                "MLCOST_DELIVERY_INTERVAL_SECONDS": "0.3",
                "MLCOST_OUTBOX_LEASE_SECONDS": "1",
                "MLCOST_LEADER_CHECK_SECONDS": "0.2",
                "MLCOST_ANOMALY_HOUR": "3",
            }
            replicas = [Replica("a", env), Replica("b", env)]
            _wait(lambda: any(r.elected_at() for r in replicas), 20, "a leader")
            leader = next(r for r in replicas if r.elected_at())
            follower = next(r for r in replicas if r is not leader)
            _wait(lambda: len(fake.messages) >= 4, 20, "the first posts")
            # more budgets cross while the leader works: new alerts every few cycles
            for i in range(8, 16):
                with session_scope(factory) as session:
                    add_spend(
                        session, [spend_row(yesterday, f"m{i:02d}", "serving", "ranking", "90")]
                    )
                time.sleep(0.1)
            leader.process.kill()  # mid-cycle: a post is usually in flight
            killed_at = time.monotonic()
            leader.process.wait()
            with session_scope(factory) as session:
                add_spend(
                    session,
                    [
                        spend_row(yesterday, f"m{i:02d}", "serving", "ranking", "95")
                        for i in range(16, models)
                    ],
                )
                add_spend(session, [spend_row(yesterday, "m00", "training", "ranking", "20")])
            expected = {
                f"budget:model:m{i:02d}:{yesterday:%Y-%m}:actual:80" for i in range(1, models)
            }
            expected.add(f"budget:model:m00:{yesterday:%Y-%m}:actual:100")
            expected.add(f"budget:model:m00:{yesterday:%Y-%m}:actual:80")

            def keys() -> list[str]:
                return [
                    m["metadata"]["event_payload"]["key"]
                    for m in list(fake.messages.values())
                    if m.get("metadata")
                ]

            _wait(lambda: set(keys()) >= expected, 30, "every alert")
            time.sleep(1.0)  # a few more cycles: nothing else may be posted
            posted = Counter(keys())
            # the budgets' alerts, each once; on a Monday the weekly sign-off DMs are due too
            # (the scheduler's first runs), and may be there, each once as well
            assert {k for k in posted if not k.startswith("signoff:")} == expected
            assert max(posted.values()) == 1, [k for k, n in posted.items() if n > 1]
            took_over = follower.elected_at()
            assert took_over is not None and took_over > killed_at
            assert follower.process.poll() is None
            with session_scope(factory) as session:
                statuses = set(session.scalars(text("SELECT DISTINCT status FROM outbox")))
            assert statuses == {"delivered"}
    finally:
        for replica in replicas:
            replica.stop()
        fake.stop()


def test_sqlite_file_lock_is_seen_held_from_the_job_threads(tmp_path: Path) -> None:
    """Jobs run on executor threads; they must see the lock the election thread took."""
    import threading

    lock = leader_lock_for(make_engine(f"sqlite:///{tmp_path / 'mlcost.db'}"))
    acquired = threading.Event()
    threading.Thread(target=lambda: acquired.set() if lock.try_acquire() else None).start()
    assert acquired.wait(5)
    seen: list[bool] = []
    worker = threading.Thread(target=lambda: seen.append(lock.is_held()))
    worker.start()
    worker.join(5)
    assert seen == [True]
    lock.release()
