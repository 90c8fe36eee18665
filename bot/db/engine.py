"""Engine, sessions and migrations; the caller owns every session scope."""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import (
    ARRAY,
    Connection,
    Engine,
    any_,
    bindparam,
    create_engine,
    event,
    func,
    select,
)
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from bot.db.reading import Reader, connection_of, dialect_name
from bot.errors import MlcostError

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy.orm import Session, sessionmaker

log = logging.getLogger(__name__)
_T = TypeVar("_T")

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def dialect_insert(session: Reader) -> Any:
    """Return the session's dialect `insert`, which has ON CONFLICT (upserts, insert-if-absent).

    Each dialect's module is imported on first use: a command on SQLite never loads
    PostgreSQL's dialect package (its drivers' modules, 40 ms).
    """
    if dialect_name(session) == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert


def among(session: Reader, column: Any, values: Sequence[Any]) -> Any:
    """Return `column IN values`; on PostgreSQL `column = ANY(:array)`, one parameter.

    An IN list is one parameter per value: thousands of them (the budgets of a burst of alerts)
    cost seconds in compiling and in psycopg's parsing of the statement (issue 24). The values
    must be of the column's type.
    """
    if dialect_name(session) == "postgresql":
        return column == any_(bindparam(None, list(values), type_=ARRAY(column.type)))
    return column.in_(values)


def database_now(session: Reader) -> dt.datetime:
    """Return the database's clock (aware, UTC): the time every process and host agrees on.

    Leases and retry times several processes compare are taken from it, never from the host's
    clock, which may drift. SQLite's CURRENT_TIMESTAMP has whole seconds, so its clock is read
    with milliseconds; PostgreSQL's clock_timestamp() is the time now, not the transaction's
    start.
    """
    if dialect_name(session) == "sqlite":
        now = session.execute(select(func.strftime("%Y-%m-%d %H:%M:%f", "now"))).scalar_one()
        return dt.datetime.fromisoformat(str(now)).replace(tzinfo=dt.UTC)
    value: dt.datetime = session.execute(select(func.clock_timestamp())).scalar_one()
    return value.astimezone(dt.UTC)


class DatabaseError(MlcostError):
    """The database URL is unusable, or the database cannot be reached."""


URL_EXAMPLE = "e.g. sqlite:///mlcost.db or postgresql+psycopg://user@host:5432/mlcost"


# How many heap pages a bitmap heap scan may have PostgreSQL ask the kernel for ahead of reading
# them (effective_io_concurrency; the server's default, 1, reads them one at a time). 64 to 256
# measured alike on this VM's virtio disk.
READ_AHEAD_PAGES = 64


def read_ahead(reader: Reader) -> None:
    """Let this transaction's bitmap heap scans prefetch their pages, on PostgreSQL.

    For a statement that reads much of a month of the ledger whose pages may not be cached (a
    server that restarted, a ledger larger than its memory): the poll's top resources read
    450 MB at 100x, and the first cycle of a week went from 7.0-8.0 s to 4.6-5.5 s with it, the
    same when cached (docs/benchmarks.md). A server built without posix_fadvise refuses any
    value but 0: then the setting is left as it is (in a savepoint, so the transaction goes on).
    """
    if dialect_name(reader) != "postgresql":
        return
    connection = connection_of(reader)
    try:
        with connection.begin_nested():
            connection.exec_driver_sql(f"SET LOCAL effective_io_concurrency = {READ_AHEAD_PAGES}")
    except DBAPIError as exc:
        log.debug("no read-ahead for this transaction: %s", type(exc.orig).__name__)


@contextmanager
def snapshot_reader(session: Session) -> Iterator[Connection | None]:
    """Yield a second connection that reads what the session's transaction reads, or None.

    On PostgreSQL, while the session's transaction has written nothing (it has no transaction
    id), its snapshot is exported and a read-only REPEATABLE READ transaction on another
    connection of the same engine imports it: a statement there sees the same rows a statement
    on the session would, and both can run at once (the poll's alert drivers, issue 24). Once
    the transaction has written, another connection could not see its rows: None. None on
    SQLite too (one writer, and tests' in-memory databases are one connection); the caller
    then reads on the session.
    """
    if dialect_name(session) != "postgresql":
        yield None
        return
    own = session.connection()
    # txid_current_if_assigned (PostgreSQL 10+; pg_current_xact_id_if_assigned from 13 on)
    if own.scalar(select(func.txid_current_if_assigned())) is not None:
        yield None
        return
    snapshot = _snapshot_id(own.scalar(select(func.pg_export_snapshot())))
    with own.engine.connect() as side:
        try:
            side.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            side.exec_driver_sql(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
        except DBAPIError as exc:  # e.g. a pooler that cannot import it: read on the session
            log.warning("reading on the session alone: %s", type(exc.orig).__name__)
            side.rollback()
            yield None
            return
        try:
            yield side
        finally:
            side.rollback()


@contextmanager
def read_beside(session: Session, read: Callable[[Connection], _T]) -> Iterator[Future[_T] | None]:
    """Start `read` on a second connection reading what the session reads (snapshot_reader),
    in a thread of its own, and yield its future; None where there is no such connection (the
    caller then reads on the session). The block's end waits for the read."""
    with snapshot_reader(session) as side:
        if side is None:
            yield None
            return
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="beside") as pool:
            yield pool.submit(read, side)


def _snapshot_id(value: object) -> str:
    """Return an exported snapshot's id, checked: it is spliced into SET TRANSACTION SNAPSHOT
    (which takes no parameters)."""
    text = str(value)
    if not re.fullmatch(r"[0-9A-Fa-f-]+", text):
        raise DatabaseError(f"unexpected snapshot id from pg_export_snapshot: {text[:40]!r}")
    return text


def make_engine(url: str) -> Engine:
    """Create an engine; SQLite gets foreign keys and a busy timeout.

    A URL that cannot be parsed or names an unknown driver raises DatabaseError (the URL itself
    is never echoed: it may hold a password).
    """
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseError(f"the database URL is not a URL ({URL_EXAMPLE})") from None
    try:
        return _create_engine(url)
    except (NoSuchModuleError, ImportError, ArgumentError):
        raise DatabaseError(
            f"the database URL names an unknown database driver {parsed.drivername!r} "
            f"({URL_EXAMPLE})"
        ) from None


def database_unavailable(exc: DBAPIError, url: URL) -> DatabaseError:
    """Describe a failed connection in one line, password hidden."""
    where = url.render_as_string(hide_password=True)
    detail = str(exc.orig or exc).strip().splitlines()[0][:200] if str(exc.orig or exc) else ""
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        folder = Path(url.database).parent
        if not folder.is_dir():
            detail += f" (the folder {folder} does not exist)"
    return DatabaseError(f"cannot use the database {where}: {detail or type(exc).__name__}")


def _create_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    """Return a session factory bound to the engine (the ORM is loaded here, not at import)."""
    from sqlalchemy.orm import sessionmaker

    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """Open a session, commit when the block succeeds, roll back when it raises."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def alembic_config(url: str) -> Config:
    """Build an Alembic config pointing at the packaged migrations."""
    from alembic.config import Config  # migrations only: the other commands never load Alembic

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(engine: Engine) -> None:
    """Apply every migration up to head on the engine's database.

    A database already at head (every command's first use but the first) is told from its
    `alembic_version` row without loading Alembic, which costs a command a fifth of a second.
    """
    with engine.begin() as connection:
        if database_revisions(connection) == {packaged_head()}:
            return
        from alembic import command

        cfg = alembic_config(engine.url.render_as_string(hide_password=False))
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "head")


_REVISION = re.compile(r'^revision(?:: *str)? *= *["\']([^"\']+)["\']', re.MULTILINE)
_DOWN_REVISION = re.compile(
    r'^down_revision(?:: *[^=]+)? *= *(?:["\']([^"\']+)["\']|None)', re.MULTILINE
)


def packaged_head() -> str | None:
    """Return the one head revision of the packaged migrations, read from their files.

    None when the files do not make one straight line (Alembic then decides).
    """
    revisions: dict[str, str | None] = {}
    for path in (MIGRATIONS_DIR / "versions").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        revision, down = _REVISION.search(text), _DOWN_REVISION.search(text)
        if revision is None or down is None:
            return None
        revisions[revision.group(1)] = down.group(1)
    heads = set(revisions) - {down for down in revisions.values() if down is not None}
    return heads.pop() if len(heads) == 1 else None


def database_revisions(connection: Connection) -> set[str]:
    """Return the revisions the database's `alembic_version` table holds (none: a new one)."""
    from sqlalchemy import inspect, text

    if not inspect(connection).has_table("alembic_version"):
        return set()
    return set(connection.execute(text("SELECT version_num FROM alembic_version")).scalars())
