"""Serialise changes made by several processes: a row's lock and version, the registry's lock.

A change from Slack first claims its row: `SELECT version ... FOR UPDATE` (PostgreSQL holds the
row until the transaction ends), then a compare-and-set of the version (SQLite ignores FOR
UPDATE; its UPDATE takes the database's one write lock, and a version bumped since the read
sends it round again), and only then reads the row. So what it replaces is what the database
holds, and the next change waits for this one's commit: the audit's `before` of each change is
the `after` of the one before it.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any, TypeVar

from sqlalchemy import select, text, update
from sqlalchemy.orm import Session

from bot.db.reading import dialect_name
from bot.errors import MlcostError

log = logging.getLogger(__name__)

CLAIM_ATTEMPTS = 5

# pg_advisory_xact_lock takes a bigint: a stable one derived from a name (not the ledger's or
# the scheduler's)
REGISTRY_LOCK_KEY = int.from_bytes(
    hashlib.sha256(b"mlcost:registry").digest()[:8], "big", signed=True
)

Row = TypeVar("Row")


class ConcurrentChange(MlcostError):
    """Other changes to the same thing kept landing while this one was being recorded."""


def claim_row(session: Session, model: type[Row], row_id: int, *, what: str) -> Row | None:
    """Lock the row, bump its version, return it as the database holds it now (None: gone).

    `model` has `id` and `version` columns. Whatever this transaction changes on the row next
    is serialised with every other claim of it; `what` names the row in the error raised when
    others keep winning (SQLite only: PostgreSQL's lock makes the first attempt succeed).
    """
    table: Any = model
    for _ in range(CLAIM_ATTEMPTS):
        version = session.scalar(select(table.version).where(table.id == row_id).with_for_update())
        if version is None:
            return None
        bumped = session.execute(
            update(table)
            .where(table.id == row_id, table.version == version)
            .values(version=version + 1)
            .execution_options(synchronize_session=False)
        )
        if bumped.rowcount == 1:  # type: ignore[attr-defined]
            return session.scalars(
                select(table).where(table.id == row_id).execution_options(populate_existing=True)
            ).one()  # type: ignore[no-any-return]
        log.info("%s: a concurrent change landed first; reading again", what)
    raise ConcurrentChange(f"Others are changing {what} right now; please try again.")


def hold_registry_lock(session: Session, *, exclusive: bool) -> None:
    """Hold the registry's lock until the transaction ends: an import exclusively, Slack shared.

    A registry import holds it from its plan to its commit, so a budget or owner change made
    in Slack meanwhile waits and lands after the import (never silently reverted by it).
    PostgreSQL: a transaction-level advisory lock (Slack changes share it with each other).
    SQLite: the database's one write lock, taken now (BEGIN IMMEDIATE), for both.
    """
    if dialect_name(session) == "postgresql":
        function = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
        session.execute(text(f"SELECT {function}(:key)"), {"key": REGISTRY_LOCK_KEY})
        return
    take_sqlite_write_lock(session)


def take_sqlite_write_lock(session: Session) -> None:
    """Take SQLite's write lock now unless this transaction already writes (or is a savepoint)."""
    dbapi = session.connection().connection.dbapi_connection
    if dbapi is not None and not dbapi.in_transaction:  # type: ignore[attr-defined]
        dbapi.execute("BEGIN IMMEDIATE")  # type: ignore[attr-defined]
