"""A migrated database opened for one test (outside the shared session fixture)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from bot.db.engine import make_engine, make_session_factory, upgrade


@contextmanager
def migrated(url: str) -> Iterator[tuple[Engine, sessionmaker[Session]]]:
    """Open a migrated database and its session factory."""
    engine = make_engine(url)
    upgrade(engine)
    try:
        yield engine, make_session_factory(engine)
    finally:
        engine.dispose()
