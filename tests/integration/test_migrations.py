from __future__ import annotations

import datetime as dt
from decimal import Decimal

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import column, insert, inspect, select, table
from sqlalchemy.orm import Session

from bot.db.engine import alembic_config, make_engine, upgrade
from bot.db.schema import Base, Budget, DailySpend, IngestionRun, SpendRollup
from tests.support.alert_walk import spend_row
from tests.support.ledger import assert_rollup_matches_ledger


def test_upgrade_head_matches_the_models_and_downgrade_works(database_url: str) -> None:
    engine = make_engine(database_url)
    upgrade(engine)
    with engine.connect() as conn:
        diff = compare_metadata(
            MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata
        )
    assert diff == []
    cfg = alembic_config(database_url)
    command.downgrade(cfg, "base")
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    upgrade(engine)
    assert "daily_spend" in inspect(engine).get_table_names()
    engine.dispose()


def test_the_rollup_migration_sums_the_ledger_already_there(database_url: str) -> None:
    engine = make_engine(database_url)
    cfg = alembic_config(database_url)
    command.downgrade(cfg, "base")
    command.upgrade(cfg, "0003_review_refresh")
    day = dt.date(2026, 11, 2)
    with Session(engine) as session, session.begin():
        run = IngestionRun(source="test", location="before 0004", status="succeeded")
        session.add(run)
        session.flush()
        rows = [
            {
                **spend_row(day, "alpha", "training", "ranking", cost, resource=f"i-{n}"),
                "run_id": run.id,
            }
            for n, cost in enumerate(("1.10", "2.25", "0.0000000001"))
        ] + [{**spend_row(day, None, "other", None, "7"), "run_id": run.id}]
        session.execute(insert(DailySpend.__table__), rows)
    upgrade(engine)
    with Session(engine) as session:
        assert assert_rollup_matches_ledger(session) == 2
        alpha = session.scalars(select(SpendRollup).where(SpendRollup.model == "alpha")).one()
        assert alpha.billed_cost == Decimal("3.3500000001")
        # 0005: rows written before the currency column are kept, and marked USD
        assert session.scalars(select(DailySpend.currency)).all() == ["USD"] * 4
    engine.dispose()


def test_budget_amounts_keep_their_value_across_the_budget_scale_migration(
    database_url: str,
) -> None:
    engine = make_engine(database_url)
    cfg = alembic_config(database_url)
    command.downgrade(cfg, "base")
    command.upgrade(cfg, "0012_budget_period")
    # 0012's budgets table, as it was: later columns (0014's version) are not there yet
    columns = ("scope", "monthly_amount", "period", "thresholds", "forecast")
    columns += ("forecast_threshold", "amount_revision", "currency", "updated_at")
    budgets_0012 = table("budgets", *(column(n, Budget.__table__.c[n].type) for n in columns))
    now = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
    common = {"period": "monthly", "thresholds": [], "forecast": False}
    common |= {
        "forecast_threshold": 100,
        "amount_revision": 0,
        "currency": "USD",
        "updated_at": now,
    }
    with Session(engine) as session, session.begin():
        session.execute(
            insert(budgets_0012),
            [
                {"scope": "model:a", "monthly_amount": Decimal("12000.5")} | common,
                {"scope": "model:b", "monthly_amount": Decimal("921000000.1234")} | common,
            ],
        )
    # 0012's column held 10 places: on SQLite the stored integer is the amount times 10^10
    if engine.dialect.name == "sqlite":
        with engine.begin() as conn:
            conn.exec_driver_sql("UPDATE budgets SET monthly_amount = monthly_amount * 1000000")
    upgrade(engine)
    with Session(engine) as session:
        amounts = dict(session.execute(select(Budget.scope, Budget.monthly_amount)).all())
    assert amounts == {"model:a": Decimal("12000.5"), "model:b": Decimal("921000000.1234")}
    engine.dispose()


def test_the_head_read_from_the_files_is_alembics(database_url: str) -> None:
    from alembic.script import ScriptDirectory

    from bot.db.engine import database_revisions, packaged_head

    script = ScriptDirectory.from_config(alembic_config(database_url))
    assert packaged_head() == script.get_current_head()
    engine = make_engine(database_url)
    upgrade(engine)
    with engine.connect() as conn:
        assert database_revisions(conn) == {packaged_head()}
    # a database one migration behind is upgraded (upgrade does not stop at "has a version")
    command.downgrade(alembic_config(database_url), "-1")
    with engine.connect() as conn:
        assert database_revisions(conn) == {script.get_revision("head").down_revision}
    upgrade(engine)
    with engine.connect() as conn:
        assert database_revisions(conn) == {packaged_head()}
    engine.dispose()
