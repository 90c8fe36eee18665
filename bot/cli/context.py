"""What every command needs: settings, a database migrated on first use, and the services.

Heavy to import (SQLAlchemy, the composition root): `main` imports it once the command line
is parsed, and command modules only for type checking, so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import InterfaceError, OperationalError

from bot import bootstrap
from bot.bootstrap import build_services
from bot.config import Settings
from bot.db.engine import (
    database_unavailable,
    make_engine,
    make_session_factory,
    upgrade,
)

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from bot.bootstrap import AppServices


def cli_clock() -> dt.datetime:
    """Return the commands' time now: the composition root's clock (tests freeze this one)."""
    return bootstrap.system_clock()


@dataclass
class CliContext:
    settings: Settings
    _engine: Engine | None = field(default=None, repr=False)
    _factory: sessionmaker[Session] | None = field(default=None, repr=False)
    _services: AppServices | None = field(default=None, repr=False)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CliContext:
        """Read settings, letting --database-url win over the environment."""
        overrides = {}
        if getattr(args, "database_url", None):
            overrides["MLCOST_DATABASE_URL"] = args.database_url
        return cls(settings=Settings(**overrides))

    @property
    def engine(self) -> Engine:
        """Return the engine, applying migrations the first time."""
        if self._engine is None:
            engine = make_engine(self.settings.database_url)
            try:
                upgrade(engine)
            except (OperationalError, InterfaceError) as exc:  # unreachable, missing, no access
                engine.dispose()
                raise database_unavailable(exc, engine.url) from exc
            self._engine = engine
        return self._engine

    @property
    def session_factory(self) -> sessionmaker[Session]:
        """Return the session factory for the migrated database."""
        if self._factory is None:
            self._factory = make_session_factory(self.engine)
        return self._factory

    @property
    def services(self) -> AppServices:
        """Return the composition root's services over the migrated database, built once.

        Building them needs no Slack token: the client only fails when a command posts, and
        commands that post check for the token first.
        """
        if self._services is None:
            self._services = build_services(self.settings, self.session_factory, clock=cli_clock)
        return self._services

    @contextmanager
    def session(self) -> Iterator[Session]:
        """Open one transaction: committed on success, rolled back on any error."""
        with self.services.unit_of_work() as session:
            yield session

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """Open a connection for a command that only reads: no ORM, nothing written or committed.

        The services a report, the gate or the audit trail call take a `bot.db.reading.Reader`,
        which a Connection is; not loading SQLAlchemy's ORM saves about 0.12 s (issue 24).
        """
        with self.engine.connect() as connection:
            yield connection

    @contextmanager
    def writing(self) -> Iterator[Connection]:
        """Open a connection in a transaction for a command that writes on Core (`ingest`):
        committed when the block ends, rolled back if it raises; no ORM loaded."""
        with self.engine.begin() as connection:
            yield connection

    def now(self) -> dt.datetime:
        """Return the time now (aware, UTC), as the services' clock says, without building them."""
        return cli_clock()

    def close(self) -> None:
        """Dispose of the engine's connections."""
        if self._engine is not None:
            self._engine.dispose()
