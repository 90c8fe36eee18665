"""A second connection that reads what the session reads (bot.db.engine.snapshot_reader).

The poll's alert drivers read the ledger on it while the session sums the rollup (issue 24).
It must see exactly the session's snapshot, never rows committed after it, and must not be
used once the session's transaction has written (another connection could not see those rows).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from bot.budgets import drivers as drivers_module
from bot.budgets.drivers import top_drivers
from bot.budgets.evaluate import evaluate
from bot.db import engine as engine_module
from bot.db.engine import make_engine, make_session_factory, session_scope, snapshot_reader
from bot.db.schema import AuditLog, Budget
from bot.registry.spec import parse_registry
from bot.registry.sync import import_registry
from tests.support.alert_walk import ALERT_REGISTRY, add_spend, days, spend_row
from tests.support.ledger import ingestion_run, roll_up, spend_record

AS_OF = dt.date(2026, 11, 17)
TEAMS = {"alpha": "ranking", "beta": "ranking", "gamma": "platform"}


def audit_row(action: str) -> AuditLog:
    return AuditLog(
        at=dt.datetime(2026, 11, 17, tzinfo=dt.UTC), actor="test", action=action, target="t"
    )


def test_the_second_connection_sees_the_sessions_snapshot_and_nothing_later(
    migrated_database_url: str,
) -> None:
    engine = make_engine(migrated_database_url)
    factory = make_session_factory(engine)
    with session_scope(factory) as session:
        session.add(audit_row("before"))
    try:
        with session_scope(factory) as session:
            before = session.scalar(select(func.count()).select_from(AuditLog))
            with snapshot_reader(session) as side:
                if engine.dialect.name != "postgresql":
                    assert side is None  # SQLite: the caller reads on the session
                    return
                assert side is not None
                with session_scope(factory) as other:  # committed after the export
                    other.add(audit_row("after"))
                seen = side.scalar(select(func.count()).select_from(AuditLog))
                assert seen == before == 1
            session.add(audit_row("mine"))
            session.flush()  # the transaction has written: another connection cannot see it
            with snapshot_reader(session) as side:
                assert side is None
    finally:
        engine.dispose()


def test_a_snapshot_the_second_connection_cannot_import_leaves_reading_on_the_session(
    migrated_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bot.db.engine as db_engine

    engine = make_engine(migrated_database_url)
    factory = make_session_factory(engine)
    monkeypatch.setattr(db_engine, "_snapshot_id", lambda value: "00000003-0000DEAD-1")
    try:
        with session_scope(factory) as session:
            with snapshot_reader(session) as side:
                assert side is None
            # the session's own transaction is unharmed
            assert session.scalar(select(func.count()).select_from(AuditLog)) == 0
    finally:
        engine.dispose()


def seed(session: Session) -> None:
    import_registry(parse_registry(ALERT_REGISTRY), session=session, actor="test")
    for scope, model, stage, period in (
        ("model:alpha/q", "alpha", None, "quarterly"),
        ("model:beta/stage:serving", "beta", "serving", "monthly"),
        ("model:gamma/w", "gamma", None, "weekly"),
    ):
        session.add(
            Budget(
                scope=scope,
                model_name=model,
                stage=stage,
                period=period,
                monthly_amount=Decimal(1),
                thresholds=[100],
                forecast=True,
            )
        )
    rng = random.Random(5)
    rows = []
    for day in days(dt.date(2026, 9, 25), AS_OF + dt.timedelta(days=1)):
        for model in TEAMS:
            for stage in ("training", "serving", "storage"):
                cost = f"{rng.randint(1, 90_000) / 100:.2f}"
                resource = f"r-{rng.randint(1, 6)}"
                rows.append(spend_row(day, model, stage, TEAMS[model], cost, resource=resource))
    add_spend(session, rows)


@contextmanager
def no_side(session: Session, read: object) -> Iterator[None]:
    """read_beside where there is no second connection: the caller reads on the session."""
    yield None


def watching(module: object, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Patch the module's read_beside to record whether each read went beside the session."""
    real = module.read_beside  # type: ignore[attr-defined]
    sides: list[bool] = []

    @contextmanager
    def watched(session: Session, read: Any) -> Iterator[object]:
        with real(session, read) as found:
            sides.append(found is not None)
            yield found

    monkeypatch.setattr(module, "read_beside", watched)
    return sides


def test_alert_drivers_read_beside_the_session_are_the_same_as_read_on_it(
    migrated_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(migrated_database_url)
    factory = make_session_factory(engine)
    try:
        with session_scope(factory) as session:
            seed(session)
        sides = watching(drivers_module, monkeypatch)
        with session_scope(factory) as session:  # reads only: on PostgreSQL the side is used
            evaluation = evaluate(session=session, as_of=AS_OF)
            beside = top_drivers(
                session=session, statuses=evaluation.statuses, evaluation=evaluation
            )
        assert sides == [engine.dialect.name == "postgresql"]
        monkeypatch.setattr(drivers_module, "read_beside", no_side)
        with session_scope(factory) as session:
            evaluation = evaluate(session=session, as_of=AS_OF)
            on_session = top_drivers(
                session=session, statuses=evaluation.statuses, evaluation=evaluation
            )
    finally:
        engine.dispose()
    assert beside == on_session
    # every shape (model, team, stage, model x stage) and period (quarter, month, week) has some
    assert len(beside) == 8
    assert all(d.resources and d.stages and d.days for d in beside.values())


def test_weekly_waste_digests_found_beside_the_budgets_are_the_same_as_found_on_the_session(
    migrated_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the poll runs the week's ledger checks on a second connection while its session plans
    # the budgets' alerts (PostgreSQL); the digests must not change for it
    from bot.config import Settings
    from bot.poll import plan as poll_plan
    from tests.support.outbox import rendered
    from tests.support.waste_surfaces import AS_OF as WEEK_AS_OF
    from tests.support.waste_surfaces import NOW, seed_all

    engine = make_engine(migrated_database_url)
    factory = make_session_factory(engine)
    settings = Settings(database_url=migrated_database_url)

    def digests() -> dict[str, object]:
        with session_scope(factory) as session:
            report = poll_plan.plan_alerts(
                session=session,
                settings=settings,
                as_of=WEEK_AS_OF,
                now=NOW,
                checks=("budgets", "unallocated", "waste"),
            )
        return {p.dedupe_key: rendered(p) for p in report.planned if p.kind == "waste"}

    try:
        with session_scope(factory) as session:
            seed_all(session)
            # spend of the Monday after the digest's week: in no finding of that week
            run = ingestion_run(session, location="test")
            late = spend_record(run, WEEK_AS_OF, "500", resource_id="i-late", stage="training")
            late.model_tag_value = "late-tag"
            session.add(late)
            roll_up(session)
        sides = watching(poll_plan, monkeypatch)
        beside = digests()
        monkeypatch.setattr(poll_plan, "read_beside", no_side)
        on_session = digests()
    finally:
        engine.dispose()
    assert sides == [engine.dialect.name == "postgresql"]
    assert set(beside) == {
        "waste:2026-11-23:C0ALPHA",
        "waste:2026-11-23:C0FINOPS",
        "waste:2026-11-23:C0PLATFORM",  # beta's volume is marked Keep: nothing for ranking
    }
    assert beside == on_session
    assert "late-tag" not in str(beside)


def test_read_ahead_prefetches_for_the_transaction_only(
    migrated_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(migrated_database_url)
    if engine.dialect.name != "postgresql":
        engine.dispose()
        pytest.skip("effective_io_concurrency is PostgreSQL's")
    factory = make_session_factory(engine)

    def setting(reader: Any) -> str:
        return str(reader.scalar(text("SHOW effective_io_concurrency")))

    try:
        with session_scope(factory) as session:
            server = setting(session)
            with snapshot_reader(session) as side:
                assert side is not None
                engine_module.read_ahead(side)  # the resource pass's connection
                assert setting(side) == str(engine_module.READ_AHEAD_PAGES)
                assert setting(session) == server  # the other connection is left as it is
            engine_module.read_ahead(session)  # the same read on the session (fallback)
            assert setting(session) == str(engine_module.READ_AHEAD_PAGES)
            session.add(audit_row("after read-ahead"))  # the transaction goes on writing
        with session_scope(factory) as session:
            assert setting(session) == server  # SET LOCAL: gone with the transaction
            assert session.scalar(select(func.count()).select_from(AuditLog)) == 1
            # a server that refuses the value (one built without posix_fadvise refuses any but
            # 0; here: beyond the range): the savepoint is rolled back, the transaction goes on
            monkeypatch.setattr(engine_module, "READ_AHEAD_PAGES", 5000)
            engine_module.read_ahead(session)
            assert setting(session) == server
            session.add(audit_row("after a refused read-ahead"))
        with session_scope(factory) as session:
            assert session.scalar(select(func.count()).select_from(AuditLog)) == 2
    finally:
        engine.dispose()
