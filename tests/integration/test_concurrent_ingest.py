"""Two ingestions at once on PostgreSQL: the second waits for the first, nothing counts twice."""

from __future__ import annotations

import os
import threading
import time

import pytest
from sqlalchemy.orm import Session

from bot.db.engine import make_engine, make_session_factory, session_scope, upgrade
from bot.ingest.ledger import ingest
from bot.ingest.sources.focus import FocusSource
from tests.conftest import DATA, PG_ENV
from tests.support.ledger import assert_rollup_matches_ledger, ledger_totals
from tests.support.sample_registry import load_registry

FOCUS = str(DATA / "focus_sample.csv")


@pytest.mark.skipif(not os.environ.get(PG_ENV), reason="needs PostgreSQL")
def test_a_reingestion_waits_for_a_concurrent_one_and_nothing_doubles(database_url: str) -> None:
    engine = make_engine(database_url)
    upgrade(engine)
    factory = make_session_factory(engine)
    with session_scope(factory) as session:
        load_registry(session)
        ingest(FocusSource([FOCUS]), session=session)
    with factory() as session:
        once = ledger_totals(session)

    first = factory()
    ingest(FocusSource([FOCUS]), session=first)  # replaced, not committed yet
    finished = threading.Event()

    def second() -> None:
        with session_scope(factory) as session:
            ingest(FocusSource([FOCUS]), session=session)
        finished.set()

    worker = threading.Thread(target=second)
    worker.start()
    time.sleep(1.0)
    assert not finished.is_set()  # waiting for the first to end
    first.commit()
    first.close()
    worker.join(timeout=30)
    assert finished.is_set()

    with Session(engine) as session:
        assert ledger_totals(session) == once  # replaced twice, never doubled
        assert_rollup_matches_ledger(session)
    engine.dispose()
