"""What a registry import changes, entity by entity, and the audit records it leaves.

The entities are teams, models, budgets, owner lists and the registry's settings. A team's or
model's owners are part of its record when it is created or removed, and an owner list of its
own when the team or model stays and only its owners change. One import leaves one
`registry.import` record (its id is the import's id, its detail the counts) and one record per
changed entity (`registry.<kind>.<create|update|remove>`, target the team, model or budget
scope, detail `{"import": id, "before": ..., "after": ...}`). The dry run and the import count
the same list, so what is printed is what is audited.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, update

from bot.db.tables import audit_log, utcnow
from bot.periods import MONTHLY

if TYPE_CHECKING:  # the audit trail reads IMPORT_ACTION without loading the registry's models
    from sqlalchemy.orm import Session

    from bot.registry.spec import BudgetSpec, ModelSpec, RegistrySpec, TeamSpec

IMPORT_ACTION = "registry.import"
CREATE, UPDATE, REMOVE = "create", "update", "remove"
# The audit detail key naming entities whose Slack-side values an import kept.
KEPT_SLACK_CHANGES = "kept_slack_changes"


@dataclass(frozen=True)
class EntityChange:
    """One entity an import creates, updates or removes, with its values before and after."""

    kind: str  # team, model, owners, budget, settings
    target: str  # team:search, model:embed, a budget scope, or registry
    verb: str  # CREATE, UPDATE or REMOVE
    before: Any
    after: Any

    @property
    def action(self) -> str:
        """Return the audit action: `registry.budget.update`."""
        return f"registry.{self.kind}.{self.verb}"


@dataclass(frozen=True)
class ImportResult:
    """What an import changed and the id its audit records share (None when nothing changed)."""

    changes: list[EntityChange]
    import_id: int | None

    def counts(self) -> dict[str, int]:
        """Return the entities created, updated and removed, as printed and audited."""
        return count_changes(self.changes)


def count_changes(changes: Sequence[EntityChange]) -> dict[str, int]:
    """Count the changes by verb."""
    verbs = [c.verb for c in changes]
    return {
        "created": verbs.count(CREATE),
        "updated": verbs.count(UPDATE),
        "removed": verbs.count(REMOVE),
    }


def _decimal_text(value: Decimal) -> str:
    """Return an exact decimal string without trailing zeros: `12000`, `5000.5`."""
    return format(value.normalize(), "f")


def team_values(team: TeamSpec) -> dict[str, Any]:
    """Return a team as its audit record shows it (owners only when created or removed)."""
    return {"channel": team.channel}


def model_values(model: ModelSpec) -> dict[str, Any]:
    """Return a model as its audit record shows it (owners only when created or removed)."""
    return {
        "team": model.team,
        "channel": model.channel,
        "description": model.description,
        "match": model.match.model_dump(mode="json", exclude_defaults=True),
        "gate": None
        if model.gate is None
        else model.gate.model_dump(mode="json", exclude_none=True),
    }


def budget_values(budget: BudgetSpec, default_currency: str) -> dict[str, Any]:
    """Return a budget as its audit record shows it: the amount as `budget.set` names it."""
    key = "monthly" if budget.period == MONTHLY else "amount"
    return {
        key: _decimal_text(budget.per_period),
        "period": budget.period,
        "thresholds": list(budget.thresholds),
        "forecast": budget.forecast,
        "forecast_threshold": budget.forecast_threshold,
        "currency": budget.currency or default_currency,
    }


def settings_values(spec: RegistrySpec) -> dict[str, Any]:
    """Return the registry's settings, one key per setting (attribution and chargeback flat)."""
    attribution = spec.attribution.model_dump(mode="json", exclude_none=True)
    return {
        "admins": sorted(spec.admins),
        "finops_channel": spec.finops_channel,
        **{f"attribution.{key}": value for key, value in attribution.items()},
        **{
            f"chargeback.{key}": value
            for key, value in spec.chargeback.model_dump(mode="json").items()
        },
    }


def _owners(owners: Sequence[str]) -> list[str]:
    return sorted(set(owners))


def _with_owners(values: dict[str, Any], owners: Sequence[str]) -> dict[str, Any]:
    return {**values, "owners": _owners(owners)}


def _entities(
    kind: str,
    prefix: str,
    old: dict[str, Any],
    new: dict[str, Any],
    values: Any,
    changes: list[EntityChange],
) -> None:
    """Append the created, updated and removed entities of one kind (and their owner lists)."""
    for name, spec in new.items():
        target = f"{prefix}{name}"
        was = old.get(name)
        if was is None:
            after = values(spec)
            if hasattr(spec, "owners"):
                after = _with_owners(after, spec.owners)
            changes.append(EntityChange(kind, target, CREATE, None, after))
            continue
        if values(was) != values(spec):
            changes.append(EntityChange(kind, target, UPDATE, values(was), values(spec)))
        if hasattr(spec, "owners") and _owners(was.owners) != _owners(spec.owners):
            had, has = _owners(was.owners), _owners(spec.owners)
            verb = CREATE if not had else REMOVE if not has else UPDATE
            changes.append(EntityChange("owners", target, verb, had, has))
    for name, spec in old.items():
        if name not in new:
            before = values(spec)
            if hasattr(spec, "owners"):
                before = _with_owners(before, spec.owners)
            changes.append(EntityChange(kind, f"{prefix}{name}", REMOVE, before, None))


def entity_changes(
    current: RegistrySpec, wanted: RegistrySpec, default_currency: str = "USD"
) -> list[EntityChange]:
    """Say which entities importing `wanted` over `current` creates, updates and removes."""
    changes: list[EntityChange] = []
    _entities(
        "team",
        "team:",
        {t.name: t for t in current.teams},
        {t.name: t for t in wanted.teams},
        team_values,
        changes,
    )
    _entities(
        "model",
        "model:",
        {m.name: m for m in current.models},
        {m.name: m for m in wanted.models},
        model_values,
        changes,
    )
    _entities(
        "budget",
        "",
        {b.scope: b for b in current.budgets},
        {b.scope: b for b in wanted.budgets},
        lambda budget: budget_values(budget, default_currency),
        changes,
    )
    old, new = settings_values(current), settings_values(wanted)
    keys = [key for key in new if old.get(key) != new[key]]
    if keys:
        before = {key: old.get(key) for key in keys}
        after = {key: new[key] for key in keys}
        changes.append(EntityChange("settings", "registry", UPDATE, before, after))
    return changes


def _stored_order(value: Any) -> Any:
    """Order dict keys as PostgreSQL's JSONB keeps them (shorter first), so both databases read
    the same."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda item: (len(item[0]), item[0]))
        return {key: _stored_order(item) for key, item in items}
    if isinstance(value, list):
        return [_stored_order(item) for item in value]
    return value


def record_import(
    changes: Sequence[EntityChange],
    *,
    session: Session,
    actor: str,
    kept: Sequence[str] = (),
) -> int | None:
    """Add the import's summary record and one record per change; return the import's id."""
    if not changes:
        return None
    at = utcnow()  # one time for the whole import: its records list in the order written
    summary = insert(audit_log).values(
        at=at, actor=actor, action=IMPORT_ACTION, target="registry", detail={}
    )
    import_id: int = session.execute(summary.returning(audit_log.c.id)).scalar_one()
    detail: dict[str, Any] = {"import": import_id, **count_changes(changes)}
    if kept:
        detail[KEPT_SLACK_CHANGES] = list(kept)
    session.execute(update(audit_log).where(audit_log.c.id == import_id).values(detail=detail))
    session.execute(
        insert(audit_log),
        [
            {
                "at": at,
                "actor": actor,
                "action": change.action,
                "target": change.target,
                "detail": {
                    "import": import_id,
                    "before": _stored_order(change.before),
                    "after": _stored_order(change.after),
                },
            }
            for change in changes
        ],
    )
    return import_id
