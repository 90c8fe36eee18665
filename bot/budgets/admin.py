"""Change budgets from Slack: permission-checked, validated, audited."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from bot.db.engine import dialect_insert
from bot.db.locks import claim_row, hold_registry_lock
from bot.db.schema import AuditLog, Budget, utcnow
from bot.errors import PermissionDenied, UsageError
from bot.periods import MONTHLY
from bot.registry.catalog import can_manage_model, can_manage_team, find_model, find_team, is_admin
from bot.registry.spec import BudgetSpec, parse_scope

AMOUNT_DECIMALS = 4  # what a BudgetSpec (the registry file) allows


def parse_amount(text: str) -> Decimal:
    """Parse `12000`, `$12,000` or `12k` into a non-negative Decimal."""
    cleaned = text.strip().replace(",", "").replace("$", "").lower()
    factor = Decimal(1)
    if cleaned.endswith("k"):
        cleaned, factor = cleaned[:-1], Decimal(1000)
    elif cleaned.endswith("m"):
        cleaned, factor = cleaned[:-1], Decimal(1_000_000)
    try:
        value = Decimal(cleaned) * factor
    except ArithmeticError:  # InvalidOperation, and Overflow for e.g. 1e999999k
        raise UsageError(f"{text!r} is not an amount; use e.g. 12000, $12,000 or 12k") from None
    if not value.is_finite() or value < 0 or value > Decimal("1e12"):
        raise UsageError(f"{text!r} is not a sensible budget amount")
    if int(value.normalize().as_tuple().exponent) < -AMOUNT_DECIMALS:
        raise UsageError(f"{text!r} has more than {AMOUNT_DECIMALS} decimal places")
    return value


def audit_values(budget: Budget) -> dict[str, Any]:
    """Return a budget as its audit records show it: amount (as the registry names it), period,
    thresholds."""
    key = "monthly" if budget.period == MONTHLY else "amount"
    values: dict[str, Any] = {
        key: str(budget.monthly_amount),
        "period": budget.period,
        "thresholds": budget.thresholds,
    }
    # in the order PostgreSQL's JSONB keeps keys (shorter first), so the trail reads the same
    # on SQLite and PostgreSQL
    return dict(sorted(values.items(), key=lambda item: (len(item[0]), item[0])))


def check_budget_permission(session: Session, user_id: str, scope: str) -> None:
    """Raise PermissionDenied unless the user owns the scope's model/team or is an admin."""
    model_name, team_name, _stage = parse_scope(scope)
    if model_name is not None:
        model = find_model(session, model_name)
        if not can_manage_model(session, user_id, model):
            raise PermissionDenied(
                f"Only the owners of `{model.name}` or an admin can change its budget."
            )
    elif team_name is not None:
        team = find_team(session, team_name)
        if not can_manage_team(session, user_id, team):
            raise PermissionDenied(
                f"Only the owners of team `{team.name}` or an admin can change its budget."
            )
    elif not is_admin(session, user_id):
        raise PermissionDenied("Only an admin can change an organisation-wide stage budget.")


def set_budget(
    *,
    session: Session,
    user_id: str,
    scope: str,
    amount: Decimal,
    thresholds: list[int] | None = None,
    forecast: bool | None = None,
    currency: str = "USD",
    period: str | None = None,
) -> Budget:
    """Create or change a budget after checking permission; audited with who and when.

    A new budget is in `currency` (the organisation's); a changed one keeps its own. A new
    budget is monthly unless `period` says otherwise; a changed one keeps its period unless
    `period` is given. A new amount or period is a new revision: its thresholds alert afresh.
    Changes to one budget are serialised (its row is claimed before it is read; a registry
    import running now finishes first), so the audit's `before` is the value replaced.
    """
    hold_registry_lock(session, exclusive=False)
    existing = _claimed_budget(session, scope)
    period = period or (existing.period if existing is not None else MONTHLY)
    spec = BudgetSpec.model_validate(
        {
            "scope": scope,
            "amount": amount,
            "period": period,
            **({"thresholds": thresholds} if thresholds else {}),
        }
    )
    check_budget_permission(session, user_id, spec.scope)
    before = None
    budget = existing if existing is not None else _insert(session, spec, forecast, currency)
    created = existing is None and budget is not None
    if budget is None:  # a concurrent change created it first: change it as it stands now
        budget = _claimed_budget(session, spec.scope)
        assert budget is not None, "Slack does not delete budgets"
    if not created:
        before = audit_values(budget)
        if (budget.monthly_amount, budget.period) != (spec.per_period, spec.period):
            budget.amount_revision = (budget.amount_revision or 0) + 1  # fresh thresholds
        budget.monthly_amount = spec.per_period
        budget.period = spec.period
        if thresholds:
            budget.thresholds = spec.thresholds
        if forecast is not None:
            budget.forecast = forecast
    budget.updated_by = user_id
    budget.updated_at = utcnow()
    session.add(
        AuditLog(
            actor=user_id,
            action="budget.set",
            target=spec.scope,
            detail={"before": before, "after": audit_values(budget)},
        )
    )
    session.flush()
    return budget


def _claimed_budget(session: Session, scope: str) -> Budget | None:
    """Return the scope's budget claimed for this change (None when there is none)."""
    budget_id = session.scalar(select(Budget.id).where(Budget.scope == scope))
    if budget_id is None:
        return None
    budget = claim_row(session, Budget, budget_id, what=f"the budget of {scope}")
    if budget is None:  # removed by an import just now
        return _claimed_budget(session, scope)
    return budget


def _insert(
    session: Session, spec: BudgetSpec, forecast: bool | None, currency: str
) -> Budget | None:
    """Create the budget unless a concurrent change just did; return it (None: it exists)."""
    model_name, team_name, stage = parse_scope(spec.scope)
    inserted = session.scalar(
        dialect_insert(session)(Budget.__table__)
        .values(
            scope=spec.scope,
            model_name=model_name,
            team_name=team_name,
            stage=stage,
            monthly_amount=spec.per_period,
            period=spec.period,
            thresholds=spec.thresholds,
            forecast=bool(forecast),
            forecast_threshold=100,
            currency=currency,
        )
        .on_conflict_do_nothing(index_elements=["scope"])
        .returning(Budget.id)
    )
    if inserted is None:
        return None
    budget = session.scalars(
        select(Budget).where(Budget.scope == spec.scope).execution_options(populate_existing=True)
    ).one()
    set_committed_value(budget, "monthly_amount", spec.per_period)  # as typed, for the audit
    return budget
