"""What every command needs: settings, a database migrated on first use, and the services.

Heavy to import (SQLAlchemy, the composition root): `main` imports it once the command line
is parsed, and command modules only for type checking, so `--help` stays fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlalchemy import Engine
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from bot.bootstrap import AppServices, build_services
from bot.config import Settings
from bot.db.engine import (
    database_unavailable,
    make_engine,
    make_session_factory,
    upgrade,
)


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
            self._services = build_services(self.settings, self.session_factory)
        return self._services

    @contextmanager
    def session(self) -> Iterator[Session]:
        """Open one transaction: committed on success, rolled back on any error."""
        with self.services.unit_of_work() as session:
            yield session

    def close(self) -> None:
        """Dispose of the engine's connections."""
        if self._engine is not None:
            self._engine.dispose()
