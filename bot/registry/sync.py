"""The registry: teams, models, owners, budgets and attribution rules, from YAML to the DB."""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy import delete, select
from sqlalchemy.orm import Session, selectinload

from bot.config import Settings
from bot.db.schema import Admin, AuditLog, Budget, MLModel, Owner, RegistrySetting, Team
from bot.errors import RegistryError
from bot.ingest.attribution import ML_STAGES, OTHER, AttributionRules, ModelMatcher, StageRule
from bot.ingest.attribution import normalize_tag_key as _norm

USER_ID_RE = re.compile(r"^[UW][A-Z0-9]{2,}$")
CHANNEL_RE = re.compile(r"^[CGD][A-Z0-9]{2,}$")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")
SCOPE_RE = re.compile(
    r"^(?:(?P<kind>model|team|stage):(?P<name>[a-z0-9][a-z0-9._-]*))"
    r"(?:/stage:(?P<stage>[a-z]+))?$"
)


def _check_users(users: list[str]) -> list[str]:
    for user in users:
        if not USER_ID_RE.match(user):
            raise ValueError(f"{user!r} is not a Slack user ID (like U0AAA111)")
    return users


def _check_channel(channel: str | None) -> str | None:
    if channel is not None and not CHANNEL_RE.match(channel):
        raise ValueError(f"{channel!r} is not a Slack channel ID (like C0RANKING)")
    return channel


def _check_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise ValueError(f"{name!r} must be lower-case letters, digits, '.', '_' or '-'")
    return name


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TeamSpec(_Spec):
    name: str
    channel: str | None = None
    owners: list[str] = Field(default_factory=list)

    _name = field_validator("name")(_check_name)
    _channel = field_validator("channel")(_check_channel)
    _owners = field_validator("owners")(_check_users)


class MatchSpec(_Spec):
    tags: dict[str, str | list[str]] = Field(default_factory=dict)
    resource_ids: list[str] = Field(default_factory=list)
    accounts: list[str] = Field(default_factory=list)


class ModelSpec(_Spec):
    name: str
    team: str
    owners: list[str] = Field(default_factory=list)
    channel: str | None = None
    description: str | None = None
    match: MatchSpec = Field(default_factory=MatchSpec)

    _name = field_validator("name")(_check_name)
    _channel = field_validator("channel")(_check_channel)
    _owners = field_validator("owners")(_check_users)


class BudgetSpec(_Spec):
    scope: str
    monthly: Decimal = Field(ge=0, max_digits=20, decimal_places=4)
    thresholds: list[int] = Field(default_factory=lambda: [50, 80, 100])
    forecast: bool = False
    forecast_threshold: int = Field(default=100, ge=1, le=1000)
    # the amount's ISO 4217 code; None: the organisation's (MLCOST_CURRENCY) at import
    currency: str | None = None

    @field_validator("currency")
    @classmethod
    def _currency(cls, code: str | None) -> str | None:
        if code is not None and not re.fullmatch(r"[A-Z]{3}", code):
            raise ValueError(f"{code!r} is not a 3-letter ISO 4217 currency code such as USD")
        return code

    @field_validator("scope")
    @classmethod
    def _scope(cls, scope: str) -> str:
        match = SCOPE_RE.match(scope)
        if not match:
            raise ValueError(
                f"{scope!r} is not a scope; use model:NAME, team:NAME, stage:NAME "
                "or model:NAME/stage:NAME"
            )
        stages = (*ML_STAGES, OTHER)
        if match["kind"] == "stage" and (match["name"] not in stages or match["stage"]):
            raise ValueError(f"stage must be one of {', '.join(stages)}")
        if match["stage"] and match["stage"] not in stages:
            raise ValueError(f"stage must be one of {', '.join(stages)}")
        return scope

    @field_validator("thresholds")
    @classmethod
    def _thresholds(cls, values: list[int]) -> list[int]:
        if not values:
            raise ValueError("give at least one threshold percentage")
        if any(v <= 0 or v > 1000 for v in values):
            raise ValueError("thresholds are percentages between 1 and 1000")
        return sorted(set(values))


class StageRuleSpec(_Spec):
    stage: Literal["training", "serving", "storage", "data", "other"]
    service: str | None = None
    usage_type: str | None = None
    category: str | None = None


class AttributionSpec(_Spec):
    model_tag_keys: list[str] = Field(default_factory=lambda: ["ml:model", "model"])
    stage_tag_keys: list[str] = Field(default_factory=lambda: ["ml:stage", "stage"])
    team_tag_keys: list[str] = Field(default_factory=lambda: ["team"])
    stage_rules: list[StageRuleSpec] = Field(default_factory=list)


class RegistrySpec(_Spec):
    teams: list[TeamSpec] = Field(default_factory=list)
    models: list[ModelSpec] = Field(default_factory=list)
    budgets: list[BudgetSpec] = Field(default_factory=list)
    admins: list[str] = Field(default_factory=list)
    finops_channel: str | None = None
    attribution: AttributionSpec = Field(default_factory=AttributionSpec)

    _admins = field_validator("admins")(_check_users)
    _channel = field_validator("finops_channel")(_check_channel)


def parse_scope(scope: str) -> tuple[str | None, str | None, str | None]:
    """Split a budget scope into (model, team, stage)."""
    match = SCOPE_RE.match(scope)
    if not match:
        raise RegistryError(f"{scope!r} is not a budget scope")
    kind, name, stage = match["kind"], match["name"], match["stage"]
    if kind == "model":
        return name, None, stage
    if kind == "team":
        return None, name, stage
    return None, None, name


# --- YAML with line numbers -------------------------------------------------------------

_CORE = "tag:yaml.org,2002:"
CORE_TAGS = frozenset(_CORE + t for t in ("str", "int", "float", "bool", "null", "seq", "map"))
MAX_DEPTH = 20


class _RefusedYAML(yaml.MarkedYAMLError):
    """A construct the registry does not allow, reported at its line."""


class _RegistryLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors, aliases, non-core tags and deep nesting while composing.

    The checks run on each event before its node is built, so nothing is ever expanded.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _RefusedYAML(
                problem="anchors and aliases (&name, *name) are not allowed in a registry file; "
                "write each value out",
                problem_mark=event.start_mark,
            )
        tag = getattr(event, "tag", None)
        if tag not in (None, "!") and tag not in CORE_TAGS:
            shown = "!!" + tag.removeprefix(_CORE) if tag.startswith(_CORE) else tag
            raise _RefusedYAML(
                problem=f"the tag {shown} is not allowed in a registry file; "
                "remove it (plain strings, numbers, lists and mappings only)",
                problem_mark=event.start_mark,
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _RefusedYAML(
                    problem=f"nested deeper than {MAX_DEPTH} levels", problem_mark=event.start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _compose(text: str) -> yaml.Node | None:
    loader = _RegistryLoader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def _yaml_error_line(exc: yaml.YAMLError, text: str) -> int | None:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        return int(mark.line) + 1
    if isinstance(exc, yaml.reader.ReaderError):
        return text[: exc.position].count("\n") + 1
    return None


def _yaml_error_message(exc: yaml.YAMLError, text: str, source: str) -> str:
    """Say what is wrong with the YAML in one line: file, line, problem."""
    line = _yaml_error_line(exc, text)
    if isinstance(exc, _RefusedYAML):
        problem = str(exc.problem)
    elif isinstance(exc, yaml.reader.ReaderError):
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        problem = f"invalid YAML: character #x{code:04x} is not allowed"
    else:
        parts = [getattr(exc, "context", None), getattr(exc, "problem", None)]
        detail = ", ".join(str(p) for p in parts if p) or str(exc)
        problem = "invalid YAML: " + " ".join(detail.split())
    return f"{source}:{line or '?'}: {problem}"


def _to_python(
    node: yaml.Node,
    path: tuple[Any, ...],
    lines: dict[tuple[Any, ...], int],
    constructor: yaml.constructor.SafeConstructor,
) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _CORE + "merge":
                raise _RefusedYAML(
                    problem="merge keys (<<) are not allowed in a registry file",
                    problem_mark=key_node.start_mark,
                )
            if not isinstance(key_node, yaml.ScalarNode):
                raise _RefusedYAML(
                    problem="mapping keys must be plain values", problem_mark=key_node.start_mark
                )
            key = constructor.construct_object(key_node)
            if key in result:
                raise _RefusedYAML(
                    problem=f"duplicate key {key!r}", problem_mark=key_node.start_mark
                )
            result[key] = _to_python(value_node, (*path, key), lines, constructor)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [
            _to_python(item, (*path, i), lines, constructor) for i, item in enumerate(node.value)
        ]
    return constructor.construct_object(node)


def _line_for(path: Sequence[Any], lines: dict[tuple[Any, ...], int]) -> int | None:
    current = tuple(path)
    while current:
        if current in lines:
            return lines[current]
        current = current[:-1]
    return lines.get(())


def parse_registry(text: str, source: str = "registry") -> RegistrySpec:
    """Parse and fully validate registry YAML; raise RegistryError naming line and field."""
    lines: dict[tuple[Any, ...], int] = {}
    try:
        node = _compose(text)
        constructor = yaml.constructor.SafeConstructor()
        data = _to_python(node, (), lines, constructor) if node is not None else {}
    except yaml.YAMLError as exc:
        raise RegistryError(_yaml_error_message(exc, text, source)) from None
    if not isinstance(data, dict):
        raise RegistryError(f"{source}: the registry must be a mapping with teams, models, ...")
    try:
        spec = RegistrySpec.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
            line = _line_for(loc, lines)
            field = ".".join(str(p) for p in loc) or "(top level)"
            msg = err["msg"].removeprefix("Value error, ")
            problems.append(f"{source}:{line or '?'}: {field}: {msg}")
        raise RegistryError("\n".join(problems)) from None
    problems = _cross_check(spec, lines, source)
    if problems:
        raise RegistryError("\n".join(problems))
    return spec


def _cross_check(spec: RegistrySpec, lines: dict[tuple[Any, ...], int], source: str) -> list[str]:
    problems: list[str] = []

    def report(path: tuple[Any, ...], message: str) -> None:
        field = ".".join(str(p) for p in path)
        problems.append(f"{source}:{_line_for(path, lines) or '?'}: {field}: {message}")

    team_names: set[str] = set()
    for i, team in enumerate(spec.teams):
        if team.name in team_names:
            report(("teams", i, "name"), f"duplicate team {team.name!r}")
        team_names.add(team.name)
    model_names: set[str] = set()
    for i, model in enumerate(spec.models):
        if model.name in model_names:
            report(("models", i, "name"), f"duplicate model {model.name!r}")
        model_names.add(model.name)
        if model.team not in team_names:
            report(("models", i, "team"), f"unknown team {model.team!r}")
    scopes: set[str] = set()
    for i, budget in enumerate(spec.budgets):
        if budget.scope in scopes:
            report(("budgets", i, "scope"), f"duplicate budget scope {budget.scope!r}")
        scopes.add(budget.scope)
        scope_model, scope_team, _stage = parse_scope(budget.scope)
        if scope_model is not None and scope_model not in model_names:
            report(("budgets", i, "scope"), f"unknown model {scope_model!r}")
        if scope_team is not None and scope_team not in team_names:
            report(("budgets", i, "scope"), f"unknown team {scope_team!r}")
    return problems


# --- database sync ------------------------------------------------------------------------


# The audit detail key naming entities whose Slack-side values an import kept.
KEPT_SLACK_CHANGES = "kept_slack_changes"


def import_registry(
    spec: RegistrySpec,
    *,
    session: Session,
    actor: str = "cli",
    kept: Sequence[str] = (),
    default_currency: str = "USD",
) -> dict[str, int]:
    """Make the database match the spec exactly (idempotent); return counts of what changed.

    `kept` names entities whose Slack-side changes the spec kept; the audit record says so.
    A budget without a `currency` gets `default_currency` (the organisation's, MLCOST_CURRENCY).
    """
    changes = {"created": 0, "updated": 0, "removed": 0}

    teams = {t.name: t for t in session.scalars(select(Team).options(selectinload(Team.owners)))}
    for team_spec in spec.teams:
        team = teams.get(team_spec.name)
        if team is None:
            team = Team(name=team_spec.name, channel=team_spec.channel)
            session.add(team)
            teams[team.name] = team
            changes["created"] += 1
        elif team.channel != team_spec.channel:
            team.channel = team_spec.channel
            changes["updated"] += 1
        _sync_owners(team.owners, team_spec.owners, changes)
    session.flush()

    models = {
        m.name: m for m in session.scalars(select(MLModel).options(selectinload(MLModel.owners)))
    }
    wanted_models = {m.name for m in spec.models}
    for name, stale_model in models.items():
        if name not in wanted_models:
            session.delete(stale_model)
            changes["removed"] += 1
    for model_spec in spec.models:
        match = model_spec.match.model_dump(exclude_defaults=True)
        team = teams[model_spec.team]
        model = models.get(model_spec.name)
        if model is None:
            model = MLModel(
                name=model_spec.name,
                team=team,
                channel=model_spec.channel,
                match=match,
                description=model_spec.description,
            )
            session.add(model)
            changes["created"] += 1
        else:
            fields = (model.team_id, model.channel, model.match, model.description)
            if fields != (team.id, model_spec.channel, match, model_spec.description):
                model.team = team
                model.channel = model_spec.channel
                model.match = match
                model.description = model_spec.description
                changes["updated"] += 1
        _sync_owners(model.owners, model_spec.owners, changes)
    session.flush()
    wanted_teams = {t.name for t in spec.teams}
    for name, team in teams.items():
        if name not in wanted_teams:
            session.delete(team)
            changes["removed"] += 1

    budgets = {b.scope: b for b in session.scalars(select(Budget))}
    wanted_scopes = {b.scope for b in spec.budgets}
    for scope, stale_budget in budgets.items():
        if scope not in wanted_scopes:
            session.delete(stale_budget)
            changes["removed"] += 1
    for budget_spec in spec.budgets:
        model_name, team_name, stage = parse_scope(budget_spec.scope)
        values = {
            "model_name": model_name,
            "team_name": team_name,
            "stage": stage,
            "monthly_amount": budget_spec.monthly,
            "thresholds": budget_spec.thresholds,
            "forecast": budget_spec.forecast,
            "forecast_threshold": budget_spec.forecast_threshold,
            "currency": budget_spec.currency or default_currency,
        }
        budget = budgets.get(budget_spec.scope)
        if budget is None:
            session.add(Budget(scope=budget_spec.scope, updated_by=actor, **values))
            changes["created"] += 1
        elif any(getattr(budget, k) != v for k, v in values.items()):
            if budget.monthly_amount != budget_spec.monthly:
                budget.amount_revision = (budget.amount_revision or 0) + 1  # fresh thresholds
            for key, value in values.items():
                setattr(budget, key, value)
            budget.updated_by = actor
            changes["updated"] += 1

    current_admins = set(session.scalars(select(Admin.user_id)))
    if current_admins != set(spec.admins):
        session.execute(delete(Admin))
        session.add_all(Admin(user_id=u) for u in sorted(set(spec.admins)))
        changes["updated" if current_admins else "created"] += 1

    settings: dict[str, Any] = {
        "finops_channel": spec.finops_channel,
        "attribution": spec.attribution.model_dump(exclude_none=True),
    }
    for key, value in settings.items():
        row = session.get(RegistrySetting, key)
        if row is None:
            session.add(RegistrySetting(key=key, value=value))
            changes["created"] += 1
        elif row.value != value:
            row.value = value
            changes["updated"] += 1

    if any(changes.values()):
        detail: dict[str, Any] = dict(changes)
        if kept:
            detail[KEPT_SLACK_CHANGES] = list(kept)
        session.add(
            AuditLog(actor=actor, action="registry.import", target="registry", detail=detail)
        )
    session.flush()
    return changes


def _sync_owners(current: list[Owner], wanted: list[str], changes: dict[str, int]) -> None:
    """Make the owner list match; a change to an existing list counts as an update."""
    have = {o.user_id for o in current}
    if have == set(wanted):
        return
    for owner in list(current):
        if owner.user_id not in wanted:
            current.remove(owner)
    for user in wanted:
        if user not in have:
            current.append(Owner(user_id=user))
    if have:
        changes["updated"] += 1


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
            )
            for m in models
        ],
        budgets=[
            BudgetSpec(
                scope=b.scope,
                monthly=b.monthly_amount.normalize(),
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
    )


def registry_to_yaml(spec: RegistrySpec) -> str:
    """Render a spec as YAML in the documented format."""
    data = spec.model_dump(mode="json", exclude_defaults=False)
    for budget in data["budgets"]:
        amount = Decimal(budget["monthly"])
        budget["monthly"] = int(amount) if amount == amount.to_integral() else float(amount)
    for model in data["models"]:
        model["match"] = {k: v for k, v in model["match"].items() if v}
        for key in ("channel", "description"):
            if model[key] is None:
                del model[key]
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def load_registry_file(path: Path) -> RegistrySpec:
    """Read and validate a registry file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise RegistryError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise RegistryError(f"{path}:{line}: not UTF-8 text (byte {exc.start})") from None
    return parse_registry(text, source=str(path))


def cost_explorer_tag_key(*, session: Session, settings: Settings) -> str:
    """Return the model tag key Cost Explorer groups by: the registry's first, else the settings'.

    The key is returned as written (Cost Explorer matches the raw key, not a normalised one).
    """
    default = settings.model_tag_keys[0]
    setting = session.get(RegistrySetting, "attribution")
    if setting is None:
        return default
    keys = AttributionSpec.model_validate(setting.value).model_tag_keys
    return keys[0] if keys else default


def load_attribution_rules(*, session: Session) -> AttributionRules:
    """Build attribution rules from the registry stored in the database."""
    setting = session.get(RegistrySetting, "attribution")
    spec = AttributionSpec.model_validate(setting.value if setting else {})
    matchers = []
    for model in session.scalars(select(MLModel).options(selectinload(MLModel.team))):
        match = MatchSpec.model_validate(model.match or {})
        tags = {
            _norm(k): tuple(x.lower() for x in ([v] if isinstance(v, str) else v))
            for k, v in match.tags.items()
        }
        matchers.append(
            ModelMatcher(
                name=model.name,
                team=model.team.name,
                tags=tags,
                resource_ids=tuple(match.resource_ids),
                accounts=tuple(match.accounts),
            )
        )
    return AttributionRules.build(
        models=matchers,
        teams=session.scalars(select(Team.name)),
        model_tag_keys=spec.model_tag_keys,
        stage_tag_keys=spec.stage_tag_keys,
        team_tag_keys=spec.team_tag_keys,
        extra_stage_rules=[StageRule(**r.model_dump()) for r in spec.stage_rules],
    )
