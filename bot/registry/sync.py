"""The registry in the database: import a spec (exactly, idempotently), export it back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, selectinload

from bot.db.locks import hold_registry_lock
from bot.db.schema import Admin, Budget, MLModel, Owner, RegistrySetting, Team
from bot.periods import MONTHLY
from bot.registry.import_audit import ImportResult, entity_changes, record_import
from bot.registry.spec import (
    AttributionSpec,
    BudgetSpec,
    ChargebackSpec,
    GatePolicySpec,
    MatchSpec,
    ModelSpec,
    RegistrySpec,
    TeamSpec,
    parse_scope,
)


def import_registry(
    spec: RegistrySpec,
    *,
    session: Session,
    actor: str = "cli",
    kept: Sequence[str] = (),
    default_currency: str = "USD",
) -> ImportResult:
    """Make the database match the spec exactly (idempotent); audit and return what changed.

    `kept` names entities whose Slack-side changes the spec kept; the audit record says so.
    A budget without a `currency` gets `default_currency` (the organisation's, MLCOST_CURRENCY).
    """
    hold_registry_lock(session, exclusive=True)  # Slack changes wait for this transaction
    changes = entity_changes(export_registry(session=session), spec, default_currency)
    teams = _sync_teams(spec, session)
    _sync_models(spec, session, teams)
    _remove_unwanted(session, teams, {t.name for t in spec.teams})
    _sync_budgets(spec, session, actor, default_currency)
    _sync_admins(spec, session)
    _sync_settings(spec, session)
    import_id = record_import(changes, session=session, actor=actor, kept=kept)
    session.flush()
    return ImportResult(changes, import_id)


def _remove_unwanted(session: Session, existing: dict[str, Any], wanted: set[str]) -> None:
    """Delete the rows (by name) the spec no longer has."""
    for name, row in existing.items():
        if name not in wanted:
            session.delete(row)


def _sync_teams(spec: RegistrySpec, session: Session) -> dict[str, Team]:
    """Create and update the spec's teams and their owners; return every team by name."""
    teams = {t.name: t for t in session.scalars(select(Team).options(selectinload(Team.owners)))}
    for team_spec in spec.teams:
        team = teams.get(team_spec.name)
        if team is None:
            team = Team(name=team_spec.name, channel=team_spec.channel)
            session.add(team)
            teams[team.name] = team
        elif team.channel != team_spec.channel:
            team.channel = team_spec.channel
        _sync_owners(team.owners, team_spec.owners)
    session.flush()
    return teams


def _sync_models(spec: RegistrySpec, session: Session, teams: dict[str, Team]) -> None:
    """Remove models the spec dropped; create and update the rest and their owners."""
    models = {
        m.name: m for m in session.scalars(select(MLModel).options(selectinload(MLModel.owners)))
    }
    _remove_unwanted(session, models, {m.name for m in spec.models})
    for model_spec in spec.models:
        match = model_spec.match.model_dump(exclude_defaults=True)
        gate = gate_policy_json(model_spec.gate)
        team = teams[model_spec.team]
        model = models.get(model_spec.name)
        if model is None:
            model = MLModel(
                name=model_spec.name,
                team=team,
                channel=model_spec.channel,
                match=match,
                description=model_spec.description,
                gate_policy=gate,
            )
            session.add(model)
        else:
            fields = (
                model.team_id,
                model.channel,
                model.match,
                model.description,
                model.gate_policy,
            )
            if fields != (team.id, model_spec.channel, match, model_spec.description, gate):
                model.team = team
                model.channel = model_spec.channel
                model.match = match
                model.description = model_spec.description
                model.gate_policy = gate
        _sync_owners(model.owners, model_spec.owners)
    session.flush()


def gate_policy_json(gate: GatePolicySpec | None) -> dict[str, Any] | None:
    """Return a model's gate policy as stored: set limits only, amounts as exact strings."""
    if gate is None:
        return None
    return gate.model_dump(mode="json", exclude_none=True)


def load_gate_policy(model: MLModel) -> GatePolicySpec | None:
    """Return a stored model's gate policy, or None when it has none."""
    if model.gate_policy is None:
        return None
    return GatePolicySpec.model_validate(model.gate_policy)


def _sync_budgets(spec: RegistrySpec, session: Session, actor: str, default_currency: str) -> None:
    """Remove budgets the spec dropped; create and update the rest (a new amount is a revision)."""
    budgets = {b.scope: b for b in session.scalars(select(Budget))}
    _remove_unwanted(session, budgets, {b.scope for b in spec.budgets})
    for budget_spec in spec.budgets:
        model_name, team_name, stage = parse_scope(budget_spec.scope)
        values = {
            "model_name": model_name,
            "team_name": team_name,
            "stage": stage,
            "monthly_amount": budget_spec.per_period,
            "period": budget_spec.period,
            "thresholds": budget_spec.thresholds,
            "forecast": budget_spec.forecast,
            "forecast_threshold": budget_spec.forecast_threshold,
            "currency": budget_spec.currency or default_currency,
        }
        budget = budgets.get(budget_spec.scope)
        if budget is None:
            session.add(Budget(scope=budget_spec.scope, updated_by=actor, **values))
        elif any(getattr(budget, k) != v for k, v in values.items()):
            if (budget.monthly_amount, budget.period) != (
                budget_spec.per_period,
                budget_spec.period,
            ):
                budget.amount_revision = (budget.amount_revision or 0) + 1  # fresh thresholds
            for key, value in values.items():
                setattr(budget, key, value)
            budget.updated_by = actor


def _sync_admins(spec: RegistrySpec, session: Session) -> None:
    """Make the admins exactly the spec's."""
    current_admins = set(session.scalars(select(Admin.user_id)))
    if current_admins != set(spec.admins):
        session.execute(delete(Admin))
        session.add_all(Admin(user_id=u) for u in sorted(set(spec.admins)))


def _sync_settings(spec: RegistrySpec, session: Session) -> None:
    """Store the FinOps channel and the attribution rules."""
    settings: dict[str, Any] = {
        "finops_channel": spec.finops_channel,
        # what the file names, no more: tag keys it leaves out come from the settings
        # (bot.registry.stored.attribution_spec); a stored list of every default would hide them
        "attribution": spec.attribution.model_dump(exclude_none=True, exclude_unset=True),
        "chargeback": spec.chargeback.model_dump(mode="json"),
    }
    for key, value in settings.items():
        row = session.get(RegistrySetting, key)
        if row is None:
            session.add(RegistrySetting(key=key, value=value))
        elif row.value != value:
            row.value = value


def _sync_owners(current: list[Owner], wanted: list[str]) -> None:
    """Make the owner list match."""
    have = {o.user_id for o in current}
    if have == set(wanted):
        return
    for owner in list(current):
        if owner.user_id not in wanted:
            current.remove(owner)
    for user in wanted:
        if user not in have:
            current.append(Owner(user_id=user))


def _amount_fields(budget: Budget) -> dict[str, Any]:
    """Return a stored budget's amount as the registry writes it: `monthly:`, else `amount:`."""
    amount = budget.monthly_amount.normalize()
    if budget.period == MONTHLY:
        return {"monthly": amount}
    return {"amount": amount, "period": budget.period}


def export_registry(*, session: Session) -> RegistrySpec:
    """Read the database back into a registry spec."""
    teams = session.scalars(select(Team).options(selectinload(Team.owners)).order_by(Team.name))
    models = session.scalars(
        select(MLModel)
        .options(selectinload(MLModel.owners), selectinload(MLModel.team))
        .order_by(MLModel.name)
    )
    budgets = session.scalars(select(Budget).order_by(Budget.scope))
    settings = {s.key: s.value for s in session.scalars(select(RegistrySetting))}
    return RegistrySpec(
        teams=[
            TeamSpec(name=t.name, channel=t.channel, owners=sorted(o.user_id for o in t.owners))
            for t in teams
        ],
        models=[
            ModelSpec(
                name=m.name,
                team=m.team.name,
                channel=m.channel,
                owners=sorted(o.user_id for o in m.owners),
                description=m.description,
                match=MatchSpec.model_validate(m.match or {}),
                gate=load_gate_policy(m),
            )
            for m in models
        ],
        budgets=[
            BudgetSpec(
                scope=b.scope,
                **_amount_fields(b),
                thresholds=list(b.thresholds),
                forecast=b.forecast,
                forecast_threshold=b.forecast_threshold,
                currency=b.currency,
            )
            for b in budgets
        ],
        admins=sorted(session.scalars(select(Admin.user_id))),
        finops_channel=settings.get("finops_channel"),
        attribution=AttributionSpec.model_validate(settings.get("attribution") or {}),
        chargeback=ChargebackSpec.model_validate(settings.get("chargeback") or {}),
    )
