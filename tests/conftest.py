"""Shared fixtures: a migrated database (SQLite, or PostgreSQL via MLCOST_TEST_DATABASE_URL)."""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

# Cache the assertion-rewritten test modules (and this checkout's bytecode) even where the shell
# sets PYTHONDONTWRITEBYTECODE, as this kind of machine does: without the cache every pytest
# process, and each xdist worker, rewrites ~160 test modules again (7 s of a 12 s collection).
sys.dont_write_bytecode = False

from bot.db.engine import make_engine, upgrade  # noqa: E402
from tests.support.aws_models import share_loaded_aws_models  # noqa: E402
from tests.support.fake_slack import FakeSlack  # noqa: E402

share_loaded_aws_models()

# No example may fail for taking long: under `pytest -n auto` a neighbour worker can stall one
# for longer than Hypothesis's default 200 ms deadline (the tests assert behaviour, not timing).
settings.register_profile("mlcost", deadline=None)
settings.load_profile("mlcost")

DATA = Path(__file__).resolve().parent / "data"
PG_ENV = "MLCOST_TEST_DATABASE_URL"


@pytest.fixture(autouse=True)
def _no_real_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep tests off real AWS and Slack, whatever the developer's shell holds."""
    without_real_credentials(monkeypatch)


def without_real_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset AWS, Slack and database settings, set fake AWS keys (for wider-scoped fixtures too)."""
    for key in (
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "SLACK_APP_TOKEN",
        "MLCOST_DATABASE_URL",
    ):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.fixture(autouse=True)
def _no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reach the tests' local servers directly, whatever proxy the developer's shell names."""
    for name in ("http_proxy", "https_proxy", "no_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def create_database_url(tmp_dir: Path, name: str | None = None) -> str:
    """Return the URL of a new empty database on the configured backend."""
    base = os.environ.get(PG_ENV)
    if not base:
        return f"sqlite:///{tmp_dir / ((name or uuid.uuid4().hex[:8]) + '.db')}"
    db_name = _spares.take()
    return make_url(base).set(database=db_name).render_as_string(hide_password=False)


class _SpareDatabases:
    """Create empty PostgreSQL databases on a thread, two ahead of the tests that ask for one.

    A CREATE DATABASE takes 0.2-0.4 s, mostly PostgreSQL writing and syncing the copy of
    template1: about 400 a run, which the tests need not wait for.
    """

    def __init__(self, ahead: int = 2) -> None:
        self._ready: queue.Queue[str | BaseException] = queue.Queue(maxsize=ahead)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def take(self) -> str:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="create-databases", daemon=True)
            self._thread.start()
        ready = self._ready.get(timeout=120)
        if isinstance(ready, BaseException):
            raise ready
        return ready

    def _run(self) -> None:
        admin = create_engine(os.environ[PG_ENV], isolation_level="AUTOCOMMIT")
        try:
            while not self._stop.is_set():
                name: str | BaseException = f"mlcost_test_{uuid.uuid4().hex[:10]}"
                try:
                    with admin.connect() as conn:
                        conn.execute(text(f'CREATE DATABASE "{name}"'))
                except Exception as exc:  # raised in the test that takes it
                    name = exc
                while not self._stop.is_set():
                    try:
                        self._ready.put(name, timeout=0.2)
                        break
                    except queue.Full:
                        continue
                else:
                    if isinstance(name, str):
                        _drops.put(name)  # made but never taken
        finally:
            admin.dispose()

    def finish(self) -> None:
        """Stop making databases; drop the ones no test took."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        while not self._ready.empty():
            left = self._ready.get()
            if isinstance(left, str):
                _drops.put(left)


def drop_database_url(url: str) -> None:
    """Drop a database made by create_database_url (PostgreSQL only), on a background thread."""
    if url.startswith("sqlite"):
        return
    _drops.put(make_url(url).database)


class _BackgroundDrops:
    """Drop PostgreSQL test databases one after another on a thread of this test process.

    `DROP DATABASE ... WITH (FORCE)` ends the connections a test's commands left open and waits
    for them (up to a second a database, a third of the PostgreSQL run's teardown time); the
    next test need not wait. `pytest_sessionfinish` waits for the last drop.
    """

    def __init__(self) -> None:
        self.failures: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def put(self, name: str | None) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="drop-databases", daemon=True)
            self._thread.start()
        self._queue.put(name)

    def _run(self) -> None:
        admin = create_engine(os.environ[PG_ENV], isolation_level="AUTOCOMMIT")
        while (name := self._queue.get()) is not None:
            try:
                with admin.connect() as conn:
                    conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            except Exception as exc:  # reported by pytest_sessionfinish
                self.failures.append(f"{name}: {exc}")
        admin.dispose()

    def finish(self) -> list[str]:
        """Wait for every queued drop; return the ones that failed."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        return self.failures


_drops = _BackgroundDrops()
_spares = _SpareDatabases()


# The fixtures that open a database on the configured backend (pytest's fixture names for a
# test are its whole closure: a fixture built on `engine` counts).
DATABASE_FIXTURES = frozenset(
    {
        "engine",
        "session",
        "database_url",
        "migrated_template",
        "migrated_database_url",
        "demo_slack",
    }
)
ALL_ENV = "MLCOST_TEST_ALL"


def opens_database(item: pytest.Item) -> bool:
    """Whether a test can reach the configured database: through a fixture, or by reading PG_ENV
    itself (the tests that pick their backend or skip on it)."""
    if DATABASE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return True
    module = getattr(item, "module", None)
    return module is not None and PG_ENV in vars(module)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On PostgreSQL run only the tests that open a database: the others run on no database at
    all, so the SQLite pass has run them already, identically (MLCOST_TEST_ALL=1 runs them too)."""
    if not os.environ.get(PG_ENV) or os.environ.get(ALL_ENV):
        return
    keep = [item for item in items if opens_database(item)]
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if not opens_database(i)])
        items[:] = keep


def pytest_sessionfinish(session: pytest.Session) -> None:
    _spares.finish()
    failures = _drops.finish()
    if failures:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print("\ncould not drop test databases:\n" + "\n".join(failures), file=sys.stderr)


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """One migrated database for the test session."""
    url = create_database_url(tmp_path_factory.mktemp("db"), "session")
    eng = make_engine(url)
    upgrade(eng)
    yield eng
    eng.dispose()
    drop_database_url(url)


@contextlib.contextmanager
def rolled_back_session(engine: Engine) -> Iterator[Session]:
    """A session inside a transaction that is rolled back at the end (commits are savepoints)."""
    connection = engine.connect()
    outer = connection.begin()
    db = Session(bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False)
    try:
        yield db
    finally:
        db.close()
        outer.rollback()
        connection.close()


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    """A session inside a transaction that is rolled back after the test."""
    with rolled_back_session(engine) as db:
        yield db


@pytest.fixture
def database_url(tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database URL for tests that run whole commands."""
    url = create_database_url(tmp_path)
    yield url
    drop_database_url(url)


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A database migrated once per session, copied by `migrated_database_url`."""
    url = create_database_url(tmp_path_factory.mktemp("template"), "template")
    eng = make_engine(url)
    upgrade(eng)
    eng.dispose()  # a PostgreSQL template must have no connections; SQLite's WAL is folded in
    yield url
    drop_database_url(url)


@pytest.fixture
def migrated_database_url(migrated_template: str, tmp_path: Path) -> Iterator[str]:
    """A fresh database at the head revision, copied from the session's migrated template."""
    if migrated_template.startswith("sqlite"):
        source = make_url(migrated_template).database
        assert source
        target = tmp_path / f"{uuid.uuid4().hex[:8]}.db"
        shutil.copyfile(source, target)
        yield f"sqlite:///{target}"
        return
    name, template = f"mlcost_test_{uuid.uuid4().hex[:10]}", make_url(migrated_template).database
    admin = create_engine(os.environ[PG_ENV], isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
    admin.dispose()
    url = make_url(os.environ[PG_ENV]).set(database=name).render_as_string(hide_password=False)
    yield url
    drop_database_url(url)


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    """A local fake of the Slack Web API (SLACK_API_URL points slack_sdk at `fake_slack.url`)."""
    fake = FakeSlack().start()
    yield fake
    fake.stop()
