"""Leader election: exactly one process runs the scheduler.

With PostgreSQL the leader holds a session-level advisory lock on a dedicated autocommit
connection; the other replicas retry every few seconds and take over when the leader dies (its
connection closes and PostgreSQL frees the lock). With SQLite a file lock beside the database
keeps a second scheduler from starting.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from filelock import FileLock, Timeout
from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.engine import URL
from sqlalchemy.pool import NullPool

log = logging.getLogger(__name__)

# pg_try_advisory_lock takes a bigint: a stable one derived from the application's name.
LEADER_LOCK_KEY = int.from_bytes(
    hashlib.sha256(b"mlcost:scheduler").digest()[:8], "big", signed=True
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
