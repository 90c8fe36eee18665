"""Change budgets from Slack: permission-checked, validated, audited."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from bot.db.engine import dialect_insert
from bot.db.locks import claim_row, hold_registry_lock
from bot.db.schema import AuditLog, Budget
from bot.db.tables import utcnow
from bot.errors import PermissionDenied, UsageError
from bot.money import MAX_BUDGET
from bot.periods import MONTHLY
from bot.registry.catalog import can_manage_model, can_manage_team, find_model, find_team, is_admin
from bot.registry.spec import BudgetSpec, parse_scope

AMOUNT_DECIMALS = 4  # what a BudgetSpec (the registry file) allows


# What a person may type: ASCII digits only (Decimal() and str.isdigit() also take fullwidth or
# Arabic-Indic digits and underscores), commas only between groups of three, at most 4 decimals
# (what a BudgetSpec allows), an optional k or m.
_AMOUNT = re.compile(
    r"\$?(?P<whole>[0-9]+|[0-9]{1,3}(?:,[0-9]{3})+)(?:\.(?P<cents>[0-9]+))?(?P<unit>[kKmM])?"
)
_COMMA_DECIMAL = re.compile(r"\$?[0-9]+,[0-9]{1,2}[kKmM]?")
_UNITS = {"": Decimal(1), "k": Decimal(1000), "m": Decimal(1_000_000)}
AMOUNT_FORMS = (
    "use digits with an optional $, thousands commas in groups of three, an optional .cents, "
    "or a k/m suffix: 45000, $45,000, 45k, 1.5m"
)


def _quoted(typed: str) -> str:
    """Return what was typed as it can be quoted back in any reply (no markup, 40 characters)."""
    # inside a code span only a backtick (and &, <, > for mrkdwn) could change the reply
    shown = "".join("?" if c in "`<>&" or not c.isprintable() else c for c in typed)
    return shown if len(shown) <= 40 else shown[:39] + "…"


def parse_amount(text: str) -> Decimal:
    """Parse a typed budget amount (`45000`, `$45,000`, `45k`, `1.5m`) into a positive Decimal.

    The one parser for `/mlcost budget set` and the Raise budget modal: anything else is refused
    with the forms it accepts, never guessed at (`1,5` is not read as 15).
    """
    typed = text.strip()
    shown = _quoted(typed)
    if _COMMA_DECIMAL.fullmatch(typed):
        raise UsageError(
            f"`{shown}` is ambiguous: commas only separate thousands (45,000) and a decimal "
            f"takes a point (1.5); {AMOUNT_FORMS}."
        )
    match = _AMOUNT.fullmatch(typed)
    if match is None:
        if typed.lstrip("$").startswith("-"):
            raise UsageError(f"`{shown}` is not a budget: a budget is more than zero.")
        raise UsageError(f"`{shown}` is not an amount; {AMOUNT_FORMS}.")
    number = match["whole"].replace(",", "") + (f".{match['cents']}" if match["cents"] else "")
    value = Decimal(number) * _UNITS[(match["unit"] or "").lower()]
    if value <= 0:
        raise UsageError(f"`{shown}` is not a budget: a budget is more than zero.")
    if value > MAX_BUDGET:
        raise UsageError(
            f"`{shown}` is over the limit: a budget is at most 1,000,000,000,000 (one trillion)."
        )
    if int(value.normalize().as_tuple().exponent) < -AMOUNT_DECIMALS:
        raise UsageError(f"`{shown}` has more than {AMOUNT_DECIMALS} decimal places.")
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
