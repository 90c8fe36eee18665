from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from bot.db import alembic_config, make_engine, upgrade
from bot.models import Base


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
