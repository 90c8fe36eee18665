from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.models import AuditLog, Budget, MLModel, Owner
from bot.registry import export_registry, import_registry, parse_registry, registry_to_yaml
from tests.helpers import REGISTRY, load_registry


def snapshot(session: Session) -> str:
    return registry_to_yaml(export_registry(session=session))


def test_import_is_idempotent_and_export_round_trips(session: Session) -> None:
    load_registry(session)
    first = snapshot(session)
    changes = import_registry(parse_registry(REGISTRY), session=session)
    assert changes == {"created": 0, "updated": 0, "removed": 0}
    assert snapshot(session) == first
    again = import_registry(parse_registry(first), session=session)
    assert again == {"created": 0, "updated": 0, "removed": 0}


def test_import_syncs_removals_and_owner_changes(session: Session) -> None:
    load_registry(session)
    smaller = REGISTRY.replace("  - {name: staging, team: platform, owners: [U0PPP111]}\n", "")
    smaller = smaller.replace("owners: [U0AAA111], match", "owners: [U0AAA999], match")
    changes = import_registry(parse_registry(smaller), session=session)
    assert changes["removed"] == 1
    names = set(session.scalars(select(MLModel.name)))
    assert "staging" not in names
    recsys = session.scalars(select(MLModel).where(MLModel.name == "recsys")).one()
    assert [o.user_id for o in recsys.owners] == ["U0AAA999"]
    assert session.scalar(select(func.count()).select_from(Owner).where(
        Owner.model_id.is_(None), Owner.team_id.is_(None))) == 0  # fmt: skip
    actions = list(session.scalars(select(AuditLog.action)))
    assert actions.count("registry.import") == 2


def test_budget_values_are_exact(session: Session) -> None:
    load_registry(session, REGISTRY.replace("monthly: 12000", "monthly: 12000.4567"))
    budget = session.scalars(select(Budget)).one()
    assert str(budget.monthly_amount.normalize()) == "12000.4567"
    assert budget.thresholds == [50, 80, 100]
