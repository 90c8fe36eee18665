from __future__ import annotations

from decimal import Decimal

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.budgets.admin import parse_amount, set_budget
from bot.db.schema import AuditLog, Budget
from bot.errors import NotFoundError, PermissionDenied, UsageError
from tests.support.sample_registry import load_registry


def test_owner_sets_a_budget_and_it_is_audited(session: Session) -> None:
    load_registry(session)
    budget = set_budget(
        session=session,
        user_id="U0AAA111",
        scope="model:recsys",
        amount=Decimal(15000),
        thresholds=[80, 100],
    )
    assert budget.monthly_amount == Decimal(15000)
    audit = session.scalars(select(AuditLog).where(AuditLog.action == "budget.set")).one()
    assert (audit.actor, audit.target) == ("U0AAA111", "model:recsys")
    assert audit.detail["before"]["monthly"].startswith("12000")


def test_non_owner_is_refused_and_nothing_changes(session: Session) -> None:
    load_registry(session)
    with pytest.raises(PermissionDenied):
        set_budget(session=session, user_id="U0STRANGER", scope="model:recsys", amount=Decimal(1))
    with pytest.raises(PermissionDenied):
        set_budget(session=session, user_id="U0AAA111", scope="stage:storage", amount=Decimal(1))
    budget = session.scalars(select(Budget).where(Budget.scope == "model:recsys")).one()
    assert budget.monthly_amount == Decimal(12000)
    admin = set_budget(
        session=session, user_id="U0ADMIN01", scope="stage:storage", amount=Decimal(9000)
    )
    assert admin.stage == "storage"


def test_unknown_model_and_bad_amounts(session: Session) -> None:
    load_registry(session)
    with pytest.raises(NotFoundError, match="Did you mean `recsys`"):
        set_budget(session=session, user_id="U0ADMIN01", scope="model:recsy", amount=Decimal(1))
    assert parse_amount("$12,500") == Decimal(12500)
    assert parse_amount("12k") == Decimal(12000)
    for bad in ("-5", "lots", "1e40", "nan"):
        with pytest.raises(UsageError):
            parse_amount(bad)


def test_a_budget_just_under_one_trillion_is_stored_and_read_back_exactly(
    session: Session,
) -> None:
    load_registry(session)
    amount = parse_amount("$999,999,999,999.99")
    set_budget(session=session, user_id="U0AAA111", scope="model:recsys", amount=amount)
    set_budget(session=session, user_id="U0AAA111", scope="team:ranking", amount=Decimal("930e6"))
    session.flush()
    session.expire_all()  # read back from the database, not the identity map
    stored = {s: a for s, a in session.execute(select(Budget.scope, Budget.monthly_amount))}
    assert stored["model:recsys"] == Decimal("999999999999.99")
    assert stored["team:ranking"] == Decimal(930_000_000)
    with pytest.raises(UsageError, match="1,000,000,000,000"):
        parse_amount("1000000000001")
