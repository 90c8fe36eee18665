"""A budget set in Slack while `mlcost registry import` syncs is never silently reverted.

The import holds the registry's lock from its plan to its commit; the Slack change, made on
its own connection in the middle of the import's sync phase, waits for it and lands after.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

import bot.registry.sync as sync
from bot.budgets.admin import set_budget
from bot.cli import main
from bot.db.engine import session_scope
from bot.db.schema import AuditLog, Budget
from tests.support.database import migrated
from tests.support.sample_registry import REGISTRY, load_registry

SCOPE = "model:recsys"
OWNER = "U0AAA111"
SLACK_WAIT_SECONDS = 2.0  # how long the sync phase waits for the Slack change to finish


def test_a_slack_budget_set_during_the_sync_phase_lands_after_the_import(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with migrated(database_url) as (_engine, factory):
        with session_scope(factory) as session:
            load_registry(session)  # model:recsys: 12,000 a month
        registry = tmp_path / "registry.yaml"
        registry.write_text(REGISTRY.replace("monthly: 12000", "monthly: 20000"))
        slack_done: list[str] = []

        def slack_change() -> None:
            with session_scope(factory) as session:
                set_budget(session=session, user_id=OWNER, scope=SCOPE, amount=Decimal(15000))
            slack_done.append("confirmed")

        slack = threading.Thread(target=slack_change)
        real_sync_budgets = sync._sync_budgets

        def sync_budgets_meanwhile(*args: Any, **kwargs: Any) -> None:
            slack.start()  # someone runs `/mlcost budget set recsys 15000` now
            slack.join(timeout=SLACK_WAIT_SECONDS)
            real_sync_budgets(*args, **kwargs)

        monkeypatch.setattr(sync, "_sync_budgets", sync_budgets_meanwhile)
        assert main(["--database-url", database_url, "registry", "import", str(registry)]) == 0
        slack.join(timeout=60)
        assert slack_done == ["confirmed"]
        with session_scope(factory) as session:
            budget = session.scalars(select(Budget).where(Budget.scope == SCOPE)).one()
            assert budget.monthly_amount == Decimal(15000), "the Slack change was reverted"
            (change,) = session.scalars(
                select(AuditLog).where(AuditLog.action == "budget.set", AuditLog.target == SCOPE)
            )
            # the Slack change replaced what the import wrote, and the audit says so
            assert Decimal(change.detail["before"]["monthly"]) == Decimal(20000)
            assert Decimal(change.detail["after"]["monthly"]) == Decimal(15000)
