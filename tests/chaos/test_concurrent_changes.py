"""Budget sets and finding decisions from several processes at once keep one history.

Real processes against one database (PostgreSQL with MLCOST_TEST_DATABASE_URL, else a SQLite
file): every change is recorded, one after the other, and each audit record's `before` is the
`after` of the record before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from bot.budgets.admin import audit_values
from bot.db.engine import session_scope
from bot.db.schema import AuditLog, Budget, ResourceFindingRecord
from bot.waste import lifecycle
from tests.support.concurrent_changes import NOW, decide_finding, run_at_once, set_budgets
from tests.support.database import migrated
from tests.support.sample_registry import load_registry

# processes racing on purpose: not beside the other chaos tests (one worker runs the group)
pytestmark = pytest.mark.xdist_group("serve")

SCOPE = "model:recsys"
OWNER, ADMIN = "U0AAA111", "U0ADMIN01"


@pytest.fixture
def factory(database_url: str) -> Iterator[sessionmaker[Session]]:
    with migrated(database_url) as (_engine, session_factory):
        with session_scope(session_factory) as session:
            load_registry(session)  # model:recsys has a 12,000 budget
        yield session_factory


def chain(factory: sessionmaker[Session], action: str | None, target: str) -> list[dict[str, Any]]:
    """The audit details for the target, oldest first (of one action, if given)."""
    with session_scope(factory) as session:
        query = select(AuditLog).where(AuditLog.target == target).order_by(AuditLog.id)
        rows = [r for r in session.scalars(query) if action is None or r.action == action]
        return [dict(r.detail) for r in rows]


def _amounts_as_decimals(values: dict[str, Any]) -> dict[str, Any]:
    """The audited values with amounts compared as money (`12000` == `12000.0000`)."""
    return {k: Decimal(str(v)) if k in ("monthly", "amount") else v for k, v in values.items()}


def assert_gap_free(details: list[dict[str, Any]], first_before: dict[str, Any]) -> None:
    befores = [_amounts_as_decimals(d["before"]) for d in details]
    afters = [_amounts_as_decimals(v) for v in [first_before] + [d["after"] for d in details[:-1]]]
    assert befores == afters, f"an audit `before` is not the value it replaced: {details}"


def test_eight_budget_sets_from_four_processes_are_eight_revisions(
    factory: sessionmaker[Session], database_url: str
) -> None:
    with session_scope(factory) as session:
        budget = session.scalars(select(Budget).where(Budget.scope == SCOPE)).one()
        start, revision = audit_values(budget), budget.amount_revision
    amounts = [[f"{13000 + 1000 * p + r}" for r in range(2)] for p in range(4)]
    calls = [(database_url, (OWNER, ADMIN)[p % 2], SCOPE, amounts[p]) for p in range(4)]
    results = run_at_once(set_budgets, calls, expected=8)
    assert sorted(r[0] for r in results) == ["ok"] * 8, results
    details = chain(factory, "budget.set", SCOPE)
    assert len(details) == 8
    assert_gap_free(details, start)
    with session_scope(factory) as session:
        budget = session.scalars(select(Budget).where(Budget.scope == SCOPE)).one()
        assert budget.amount_revision == revision + 8
        assert budget.monthly_amount == Decimal(details[-1]["after"]["monthly"])


def finding(factory: sessionmaker[Session]) -> tuple[int, str, dict[str, Any]]:
    """An open finding on recsys's GPU instance: its id, key and decision fields."""
    with session_scope(factory) as session:
        row = ResourceFindingRecord(
            account="123456789012",
            region="us-east-1",
            kind="gpu_instance",
            resource_id="i-0idle",
            status="open",
            first_seen=NOW,
            last_seen=NOW,
            monthly_cost=Decimal("2400"),
            raised_monthly_cost=Decimal("2400"),
            currency="USD",
            model="recsys",
            team="ranking",
            reason="idle",
            action="stop_instances",
            target={"instance_id": "i-0idle"},
            details={},
        )
        session.add(row)
        session.flush()
        return row.id, lifecycle.record_key(row), lifecycle._snapshot(row)


def test_keep_and_not_waste_at_once_both_land_in_order(
    factory: sessionmaker[Session], database_url: str
) -> None:
    finding_id, key, start = finding(factory)
    calls = [
        (database_url, OWNER, lifecycle.KEEP, finding_id, 0.0),
        (database_url, ADMIN, lifecycle.NOT_WASTE, finding_id, 0.0),
    ]
    results = run_at_once(decide_finding, calls, expected=2)
    assert sorted(r[0] for r in results) == ["ok", "ok"], results
    details = chain(factory, None, key)
    assert len(details) == 2
    assert_gap_free(details, start)
    assert details[0]["before"]["decision"] == "none"
    assert details[1]["before"]["decision"] == details[0]["after"]["decision"] != "none"
    with session_scope(factory) as session:
        row = session.get(ResourceFindingRecord, finding_id)
        assert row is not None and lifecycle._snapshot(row) == details[-1]["after"]


def test_keep_pressed_just_after_stop_it_ends_in_one_state(
    factory: sessionmaker[Session], database_url: str
) -> None:
    finding_id, key, start = finding(factory)
    calls = [
        (database_url, ADMIN, lifecycle.STOP, finding_id, 0.0),
        (database_url, OWNER, lifecycle.KEEP, finding_id, 0.05),
    ]
    results = {r[1]: r for r in run_at_once(decide_finding, calls, expected=2)}
    details = chain(factory, None, key)
    assert_gap_free(details, start)
    with session_scope(factory) as session:
        row = session.get(ResourceFindingRecord, finding_id)
        assert row is not None and lifecycle._snapshot(row) == details[-1]["after"]
        decision, result = row.decision, row.action_result
    # Stop it claimed the action either way: it came first, or it overrode the Keep
    assert results[ADMIN][0] == "ok", results
    assert (decision, result) == (lifecycle.STOP, lifecycle.ACTING)
    if results[OWNER][0] == "refused":  # Stop it first: Keep says who is stopping it
        assert f"is already being stopped: <@{ADMIN}> approved Stop it" in results[OWNER][2]
        assert [d["after"]["decision"] for d in details] == [lifecycle.STOP]
    else:  # Keep first: Stop it replaced it, and the audit says so
        assert [d["after"]["decision"] for d in details] == [lifecycle.KEEP, lifecycle.STOP]
