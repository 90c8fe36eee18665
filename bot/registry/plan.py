"""Plan a registry import before applying it: the diff, and the Slack changes it would revert.

Counting for the "removes more than half" guard: the registry's entities are its teams, models,
budgets and owner assignments (one per user per team or model). An import removes an entity when
the file no longer has it; the owners of a removed team or model are removed with it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.schema import AuditLog, Budget
from bot.money import format_money_exact
from bot.periods import per_period
from bot.registry.import_audit import (
    IMPORT_ACTION,
    KEPT_SLACK_CHANGES,
    EntityChange,
    count_changes,
    entity_changes,
    settings_values,
)
from bot.registry.spec import RegistrySpec
from bot.registry.sync import export_registry

SLACK_ACTIONS = ("budget.set", "model.owners.set")
# The fields a Slack-side change sets, per kind of entity: the file reverts it if it changes one.
SLACK_FIELDS = {
    "budget": {"monthly", "amount", "period", "thresholds", "forecast"},
    "model": {"owners", "channel"},
}
# the budget fields `/mlcost budget set` changes, kept by --keep-slack-changes
SLACK_BUDGET_FIELDS = ("monthly", "amount", "period", "thresholds", "forecast")


@dataclass(frozen=True)
class FieldChange:
    entity: str
    field: str
    old: str
    new: str

    def line(self) -> str:
        """Render as `update model recsys: owners U1 -> U2`."""
        return f"update {self.entity}: {self.field} {self.old} -> {self.new}"


@dataclass
class RegistryDiff:
    created: list[str] = field(default_factory=list)
    updated: list[FieldChange] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    size: int = 0
    removed_counts: dict[str, int] = field(default_factory=dict)
    # what the import audits, one per entity; the counts printed are these
    changes: list[EntityChange] = field(default_factory=list)

    @property
    def entities_removed(self) -> int:
        """Teams, models, budgets and owner assignments the import removes."""
        return sum(self.removed_counts.values())

    def lines(self) -> list[str]:
        """One line per created, updated field, and removed entity."""
        return (
            [f"create {name}" for name in self.created]
            + [change.line() for change in self.updated]
            + [f"remove {name}" for name in self.removed]
        )

    def counts(self) -> dict[str, int]:
        """Entities created, updated and removed, counted as the import's audit counts them."""
        return count_changes(self.changes)

    def touches(self, entity: str, fields: set[str]) -> bool:
        """Whether the import removes the entity or changes one of the fields."""
        return entity in self.removed or any(
            c.entity == entity and c.field in fields for c in self.updated
        )


@dataclass(frozen=True)
class SlackChange:
    entity: str
    actor: str
    at: dt.datetime
    what: str

    def line(self) -> str:
        """Render as `budget model:recsys: monthly $12,000 -> $15,000 by U0AAA111 at ... UTC`."""
        return f"{self.entity}: {self.what} by {self.actor} at {self.at:%Y-%m-%d %H:%M} UTC"


@dataclass
class ImportPlan:
    spec: RegistrySpec
    diff: RegistryDiff
    reverted: list[SlackChange]
    kept: list[SlackChange]
    refusals: list[str]


def _show(value: Any) -> str:
    if value is None or value == [] or value == {}:
        return "(none)"
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, list) and not any(isinstance(v, dict) for v in value):
        return ", ".join(str(v) for v in value)
    if isinstance(value, list):
        return json.dumps(value, sort_keys=True, default=str)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _compare(
    diff: RegistryDiff,
    entity: str,
    old: dict[str, Any],
    new: dict[str, Any],
    currencies: tuple[str, str] | None = None,
) -> None:
    """Add a line per changed field; a budget's amounts show as money in (old, new) currency."""
    for key, new_value in new.items():
        if old.get(key) != new_value:
            before, after = old.get(key), new_value
            if currencies is not None and key in ("monthly", "amount"):
                before, after = _money(before, currencies[0]), _money(after, currencies[1])
            diff.updated.append(FieldChange(entity, key, _show(before), _show(after)))


def diff_registry(
    current: RegistrySpec, wanted: RegistrySpec, default_currency: str = "USD"
) -> RegistryDiff:
    """Say what importing `wanted` over `current` creates, updates and removes."""
    diff = RegistryDiff(changes=entity_changes(current, wanted, default_currency))
    removed = {"teams": 0, "models": 0, "budgets": 0, "owners": 0}

    def entities(kind: str, old: dict[str, Any], new: dict[str, Any]) -> None:
        for name in new:
            if name not in old:
                diff.created.append(f"{kind} {name}")
        for name, spec in old.items():
            if name not in new:
                diff.removed.append(f"{kind} {name}")
                removed[kind + "s"] += 1
                removed["owners"] += len(getattr(spec, "owners", []))

    teams_old = {t.name: t for t in current.teams}
    teams_new = {t.name: t for t in wanted.teams}
    entities("team", teams_old, teams_new)
    models_old = {m.name: m for m in current.models}
    models_new = {m.name: m for m in wanted.models}
    entities("model", models_old, models_new)
    budgets_old = {b.scope: b for b in current.budgets}
    budgets_new = {b.scope: b for b in wanted.budgets}
    entities("budget", budgets_old, budgets_new)

    for name, team in teams_new.items():
        if (old_team := teams_old.get(name)) is not None:
            removed["owners"] += len(set(old_team.owners) - set(team.owners))
            _compare(diff, f"team {name}", _team_fields(old_team), _team_fields(team))
    for name, model in models_new.items():
        if (old_model := models_old.get(name)) is not None:
            removed["owners"] += len(set(old_model.owners) - set(model.owners))
            _compare(diff, f"model {name}", _model_fields(old_model), _model_fields(model))
    for scope, budget in budgets_new.items():
        if (old_budget := budgets_old.get(scope)) is not None:
            old_fields, new_fields = _budget_fields(old_budget), _budget_fields(budget)
            currencies = (
                old_budget.currency or default_currency,
                budget.currency or default_currency,
            )
            if (
                old_budget.period != budget.period
            ):  # one line: `amount $12,000 / month -> $500 / week`
                diff.updated.append(
                    FieldChange(
                        f"budget {scope}",
                        "amount",
                        _per(old_budget, default_currency),
                        _per(budget, default_currency),
                    )
                )
                for key in ("monthly", "amount", "period"):
                    old_fields.pop(key), new_fields.pop(key)
            _compare(diff, f"budget {scope}", old_fields, new_fields, currencies)
    _compare(diff, "registry", settings_values(current), settings_values(wanted))

    owners = sum(len(t.owners) for t in current.teams) + sum(len(m.owners) for m in current.models)
    diff.size = len(current.teams) + len(current.models) + len(current.budgets) + owners
    diff.removed_counts = removed
    return diff


def _team_fields(team: Any) -> dict[str, Any]:
    return {"channel": team.channel, "owners": sorted(set(team.owners))}


def _model_fields(model: Any) -> dict[str, Any]:
    return {
        "team": model.team,
        "channel": model.channel,
        "owners": sorted(set(model.owners)),
        "description": model.description,
        "match": model.match.model_dump(exclude_defaults=True),
        "gate": None if model.gate is None else model.gate.model_dump(exclude_none=True),
    }


def _budget_fields(budget: Any) -> dict[str, Any]:
    fields = {
        "monthly": budget.monthly,
        "amount": budget.amount,
        "period": budget.period,
        "thresholds": list(budget.thresholds),
        "forecast": budget.forecast,
        "forecast_threshold": budget.forecast_threshold,
    }
    if budget.currency is not None:  # None: the organisation's, filled in by plan_import
        fields["currency"] = budget.currency
    return fields


def _per(budget: Any, default_currency: str) -> str:
    """Render a budget's amount and its period: `$2,000 / week`."""
    amount = _money(budget.per_period, budget.currency or default_currency)
    return f"{_show(amount)} / {per_period(budget.period)}"


def _money(value: Any, currency: str) -> Any:
    """Return an amount as money (`$12,000`, exact), anything else as it is."""
    return format_money_exact(value, currency) if isinstance(value, Decimal) else value


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def refusal_reasons(wanted: RegistrySpec, diff: RegistryDiff, source: str) -> list[str]:
    """Say why the import needs --yes: an empty file, or removing more than half the registry."""
    reasons = []
    if not wanted.teams and not wanted.models:
        reasons.append(f"{source} defines no teams and no models (empty or truncated?)")
    if diff.entities_removed and diff.entities_removed * 2 > diff.size:
        parts = [_plural(n, kind[:-1]) for kind, n in diff.removed_counts.items() if n]
        reasons.append(
            f"{source} would remove {diff.entities_removed} of the {diff.size} teams, models, "
            f"budgets and owners in the registry ({', '.join(parts)})"
        )
    return reasons


def _last_full_import_id(session: Session) -> int:
    """The audit id of the newest import that did not keep Slack-side changes (0 if none)."""
    rows = session.execute(
        select(AuditLog.id, AuditLog.detail)
        .where(AuditLog.action == IMPORT_ACTION)
        .order_by(AuditLog.id.desc())
    )
    for audit_id, detail in rows:
        if not (detail or {}).get(KEPT_SLACK_CHANGES):
            return int(audit_id)
    return 0


def _amount(value: Any) -> Any:
    """An audited amount (stored as text, e.g. `12000.0000000000`) as a Decimal to show."""
    try:
        return Decimal(str(value))
    except ArithmeticError:
        return value


def _describe(row: AuditLog, currencies: dict[str, str]) -> tuple[str, str]:
    """Return (entity, what changed) for a Slack-side audit record (a budget's amounts in its
    currency, from `currencies` by scope)."""
    detail = row.detail or {}
    currency = currencies.get(row.target, "USD")
    if row.action == "budget.set":
        before, after = dict(detail.get("before") or {}), dict(detail.get("after") or {})
        if not before:
            period = after.get("period", "monthly")
            amount = after.get("monthly", after.get("amount"))
            return (
                f"budget {row.target}",
                f"created with {period} {_show(_money(_amount(amount), currency))}",
            )
        for values in (before, after):
            for key in ("monthly", "amount"):
                if key in values:
                    values[key] = _money(_amount(values[key]), currency)
        parts = [
            f"{key} {_show(before.get(key))} -> {_show(after.get(key))}"
            for key in ("monthly", "amount", "period", "thresholds")
            if before.get(key) != after.get(key) and (key != "period" or "period" in before)
        ]
        return f"budget {row.target}", ", ".join(parts) or "set again unchanged"
    owners, channel = detail.get("owners") or {}, detail.get("channel") or {}
    parts = [f"owners {_show(owners.get('before'))} -> {_show(owners.get('after'))}"]
    if channel.get("before") != channel.get("after"):
        parts.append(f"channel {_show(channel.get('before'))} -> {_show(channel.get('after'))}")
    return f"model {row.target.removeprefix('model:')}", ", ".join(parts)


def slack_changes_reverted(diff: RegistryDiff, *, session: Session) -> list[SlackChange]:
    """Budget and owner changes made in Slack since the last import that the diff would undo."""
    rows = session.scalars(
        select(AuditLog)
        .where(AuditLog.id > _last_full_import_id(session), AuditLog.action.in_(SLACK_ACTIONS))
        .order_by(AuditLog.id)
    )
    currencies = {
        scope: currency
        for scope, currency in session.execute(select(Budget.scope, Budget.currency))
    }
    changes = []
    for row in rows:
        entity, what = _describe(row, currencies)
        if diff.touches(entity, SLACK_FIELDS[entity.split(" ", 1)[0]]):
            changes.append(SlackChange(entity, row.actor, row.at, what))
    return changes


def keep_slack_values(
    wanted: RegistrySpec, current: RegistrySpec, entities: Iterable[str]
) -> RegistrySpec:
    """Return `wanted` with the Slack-set fields of these entities taken from the database.

    A budget or model the file removes together with its model or team cannot be kept.
    """
    entities = set(entities)
    model_names = {m.name for m in wanted.models}
    team_names = {t.name for t in wanted.teams}
    current_models = {m.name: m for m in current.models}
    models = []
    for model in wanted.models:
        now = current_models.get(model.name)
        if f"model {model.name}" in entities and now is not None:
            model = model.model_copy(update={"owners": now.owners, "channel": now.channel})
        models.append(model)
    budgets = {b.scope: b for b in wanted.budgets}
    for budget in current.budgets:
        if f"budget {budget.scope}" not in entities:
            continue
        kind, _, rest = budget.scope.partition(":")
        name = rest.split("/", 1)[0]
        if (kind == "model" and name not in model_names) or (
            kind == "team" and name not in team_names
        ):
            continue
        old = budgets.get(budget.scope)
        budgets[budget.scope] = (
            budget
            if old is None
            else old.model_copy(update={k: getattr(budget, k) for k in SLACK_BUDGET_FIELDS})
        )
    return wanted.model_copy(update={"models": models, "budgets": list(budgets.values())})


def plan_import(
    spec: RegistrySpec,
    *,
    session: Session,
    source: str,
    keep_slack_changes: bool = False,
    default_currency: str = "USD",
) -> ImportPlan:
    """Compare the file with the database: the diff, Slack changes it reverts, reasons to refuse.

    A budget without `currency:` is in `default_currency` (MLCOST_CURRENCY), as the import makes it.
    """
    budgets = [
        b.model_copy(update={"currency": b.currency or default_currency}) for b in spec.budgets
    ]
    spec = spec.model_copy(update={"budgets": budgets})
    current = export_registry(session=session)
    diff = diff_registry(current, spec)
    reverted = slack_changes_reverted(diff, session=session)
    kept: list[SlackChange] = []
    if keep_slack_changes and reverted:
        spec = keep_slack_values(spec, current, (c.entity for c in reverted))
        diff = diff_registry(current, spec)
        still = slack_changes_reverted(diff, session=session)
        kept = [c for c in reverted if c not in still]
        reverted = still
    refusals = refusal_reasons(spec, diff, source)
    if reverted:
        refusals.append(
            f"it would revert {_plural(len(reverted), 'change')} made in Slack since the last "
            "import (listed above)"
        )
    return ImportPlan(spec=spec, diff=diff, reverted=reverted, kept=kept, refusals=refusals)


def kept_entities(changes: Sequence[SlackChange]) -> list[str]:
    """The entities whose Slack-side values an import kept, for its audit record."""
    return sorted({c.entity for c in changes})
