"""A posted review in a database of its own, for tests that need real concurrent transactions."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session, sessionmaker

from bot.config import Settings
from bot.db.engine import make_engine, make_session_factory, session_scope, upgrade
from bot.periods import month_period
from bot.review.open import open_reviews
from tests.support.economics_seed import REGISTRY, seed_review_month
from tests.support.sample_registry import load_registry

REVIEW_NOW = dt.datetime(2026, 12, 1, 9, tzinfo=dt.UTC)
PARENT_TS = "1700000000.000100"


@pytest.fixture
def review_factory(database_url: str) -> Iterator[sessionmaker[Session]]:
    """A migrated database holding the ranking team's posted November review (recsys, search)."""
    engine = make_engine(database_url)
    upgrade(engine)
    factory = make_session_factory(engine)
    with session_scope(factory) as session:
        load_registry(session, REGISTRY)
        seed_review_month(session)
        for review in open_reviews(
            session=session, month=month_period("2026-11"), settings=Settings(), now=REVIEW_NOW
        ):
            review.parent_ts = PARENT_TS if review.team_name == "ranking" else None
            for n, item in enumerate(review.items):
                item.message_ts = f"1700000001.{review.id:03d}{n:03d}"
    yield factory
    engine.dispose()
