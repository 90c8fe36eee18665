"""The registry as YAML: teams, models, owners, budgets and attribution, parsed and checked."""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from bot.errors import RegistryError, UsageError
from bot.ingest.attribution import (
    DEFAULT_MODEL_TAG_KEYS,
    DEFAULT_RUN_TAG_KEYS,
    DEFAULT_STAGE_TAG_KEYS,
    DEFAULT_TEAM_TAG_KEYS,
    ML_STAGES,
    OTHER,
)
from bot.money import MAX_BUDGET
from bot.periods import MONTHLY, check_budget_period

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


def _check_account_ids(values: Any) -> Any:
    """Refuse an account id YAML read as a number (`0123` is octal 83): it must be quoted."""
    for value in values if isinstance(values, list | dict) else [values]:
        if isinstance(value, int | float):
            raise ValueError(f'{value!r} is read as a number; quote account ids: ["123456789012"]')
    return values


class MatchSpec(_Spec):
    tags: dict[str, str | list[str]] = Field(default_factory=dict)
    resource_ids: list[str] = Field(default_factory=list)
    # usage accounts (AWS linked account, Google Cloud project, Azure subscription) or billing
    # accounts; one id or a list means any of
    accounts: list[str] = Field(default_factory=list)
    # Kubernetes namespace(s) (OpenCost allocations); a list means any of
    namespace: str | list[str] = Field(default_factory=list)

    @field_validator("accounts", mode="before")
    @classmethod
    def _accounts(cls, value: Any) -> Any:
        _check_account_ids(value)
        return [value] if isinstance(value, str) else value


FAMILY_RE = re.compile(r"^[a-z][a-z0-9-]*$")


class GatePolicySpec(_Spec):
    """A model's own release-gate limits; each is optional."""

    # the most the model may cost over the last 30 days, in the organisation's MLCOST_CURRENCY
    max_monthly: Decimal | None = Field(default=None, ge=0, max_digits=20, decimal_places=4)
    # replaces MLCOST_GATE_MAX_UNIT_COST_RISE_PCT for this model
    max_unit_cost_rise_pct: Decimal | None = Field(default=None, ge=0, le=10000, decimal_places=2)
    # instance families the model may spend on: g5, p4d, trn1 (AWS), a2 (GCP), nc (Azure)
    allowed_instance_families: list[str] | None = None

    @field_validator("allowed_instance_families")
    @classmethod
    def _families(cls, families: list[str] | None) -> list[str] | None:
        if families is None:
            return None
        if not families:
            raise ValueError("list at least one instance family, or leave the field out")
        for family in families:
            if not FAMILY_RE.match(family.lower()):
                raise ValueError(
                    f"{family!r} is not an instance family (like g5, p4d, trn1, a2 or nc); "
                    "give the family, not a size"
                )
        return sorted({f.lower() for f in families})


class ModelSpec(_Spec):
    name: str
    team: str
    owners: list[str] = Field(default_factory=list)
    channel: str | None = None
    description: str | None = None
    match: MatchSpec = Field(default_factory=MatchSpec)
    gate: GatePolicySpec | None = None

    _name = field_validator("name")(_check_name)
    _channel = field_validator("channel")(_check_channel)
    _owners = field_validator("owners")(_check_users)


# a quoted registry amount: ASCII digits, an optional decimal point
PLAIN_AMOUNT = re.compile(r"[0-9]+(?:\.[0-9]+)?")


class BudgetSpec(_Spec):
    """A budget: `monthly: 12000`, or `amount: 2000` with `period: weekly` (daily, quarterly)."""

    scope: str
    monthly: Decimal | None = Field(default=None, ge=0, max_digits=20, decimal_places=4)
    amount: Decimal | None = Field(default=None, ge=0, max_digits=20, decimal_places=4)
    period: str = MONTHLY
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

    @field_validator("monthly", "amount", mode="before")
    @classmethod
    def _plain_number(cls, amount: object) -> object:
        # a quoted amount is held to ASCII digits as Slack's parser is: Decimal() would also
        # read fullwidth or Arabic-Indic digits, underscores and exponents
        if isinstance(amount, str) and not PLAIN_AMOUNT.fullmatch(amount.strip()):
            raise ValueError(
                "write the amount as a plain number of ASCII digits with an optional "
                "decimal point: 45000 or 45000.50"
            )
        return amount

    @field_validator("monthly", "amount")
    @classmethod
    def _at_most_the_limit(cls, amount: Decimal | None) -> Decimal | None:
        if amount is not None and amount > MAX_BUDGET:
            raise ValueError(
                f"{amount:,} is over the limit: a budget is at most 1,000,000,000,000 "
                "(one trillion)"
            )
        return amount

    @field_validator("period")
    @classmethod
    def _period(cls, period: str) -> str:
        try:
            return check_budget_period(period)
        except UsageError as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _one_amount(self) -> BudgetSpec:
        if self.monthly is not None and self.amount is not None:
            raise ValueError("give `monthly:` or `amount:`, not both")
        if self.monthly is None and self.amount is None:
            raise ValueError(
                "give the budget's amount: `monthly: 12000`, "
                "or `amount: 2000` with `period: weekly`"
            )
        if self.monthly is not None and self.period != MONTHLY:
            raise ValueError(
                f"`monthly:` is the amount of a monthly budget; a {self.period} budget "
                f"gives `amount:` (e.g. `amount: 2000, period: {self.period}`)"
            )
        return self

    @property
    def per_period(self) -> Decimal:
        """Return the budget's amount for one period."""
        amount = self.monthly if self.monthly is not None else self.amount
        assert amount is not None  # _one_amount
        return amount

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
    resource: str | None = None


class AttributionSpec(_Spec):
    model_tag_keys: list[str] = Field(default_factory=lambda: [*DEFAULT_MODEL_TAG_KEYS])
    stage_tag_keys: list[str] = Field(default_factory=lambda: [*DEFAULT_STAGE_TAG_KEYS])
    team_tag_keys: list[str] = Field(default_factory=lambda: [*DEFAULT_TEAM_TAG_KEYS])
    # a training run: `ml:run`, which also matches an OpenCost/Kubernetes label `ml_run`
    run_tag_keys: list[str] = Field(default_factory=lambda: [*DEFAULT_RUN_TAG_KEYS])
    stage_rules: list[StageRuleSpec] = Field(default_factory=list)
    # a usage or billing account's spend that no model claims goes to this team
    account_teams: dict[str, str] = Field(default_factory=dict)

    _account_teams = field_validator("account_teams", mode="before")(_check_account_ids)


SplitMethod = Literal["evenly", "proportional", "fixed"]
SharedPool = Literal["unallocated", "idle", "support", "tax"]


class ChargebackSpec(_Spec):
    """How `mlcost report chargeback` splits shared costs among teams.

    `split` is every pool's method unless `pools` names another for it; `fixed` splits by
    `shares` (weights per team, e.g. percentages; they need not add up to 100).
    """

    split: SplitMethod = "proportional"
    pools: dict[SharedPool, SplitMethod] = Field(default_factory=dict)
    shares: dict[str, Decimal] = Field(default_factory=dict)

    @field_validator("shares")
    @classmethod
    def _shares(cls, shares: dict[str, Decimal]) -> dict[str, Decimal]:
        for team, share in shares.items():
            if share <= 0:
                raise ValueError(f"{team}'s share must be more than 0 (leave the team out)")
        return shares

    def method(self, pool: str) -> str:
        """Return the split method of one shared pool."""
        return {str(k): str(v) for k, v in self.pools.items()}.get(pool, self.split)

    def uses_fixed(self) -> bool:
        """Say whether any pool is split by fixed shares."""
        return self.split == "fixed" or "fixed" in self.pools.values()


class RegistrySpec(_Spec):
    teams: list[TeamSpec] = Field(default_factory=list)
    models: list[ModelSpec] = Field(default_factory=list)
    budgets: list[BudgetSpec] = Field(default_factory=list)
    admins: list[str] = Field(default_factory=list)
    finops_channel: str | None = None
    attribution: AttributionSpec = Field(default_factory=AttributionSpec)
    chargeback: ChargebackSpec = Field(default_factory=ChargebackSpec)

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
            key = _no_nul(constructor.construct_object(key_node), key_node)
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
    return _no_nul(constructor.construct_object(node), node)


def _no_nul(value: Any, node: yaml.Node) -> Any:
    """Refuse a string with a NUL byte (a `"\\0"` escape): PostgreSQL cannot store one."""
    if isinstance(value, str) and "\x00" in value:
        raise _RefusedYAML(
            problem="a NUL byte (\\0) is not allowed in a registry value",
            problem_mark=node.start_mark,
        )
    return value


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
    for account, account_team in spec.attribution.account_teams.items():
        if account_team not in team_names:
            report(("attribution", "account_teams", account), f"unknown team {account_team!r}")
    for share_team in spec.chargeback.shares:
        if share_team not in team_names:
            report(("chargeback", "shares", share_team), f"unknown team {share_team!r}")
    if spec.chargeback.uses_fixed() and not spec.chargeback.shares:
        report(("chargeback",), "a pool is split by fixed shares, but no shares are declared")
    return problems


def registry_to_yaml(spec: RegistrySpec) -> str:
    """Render a spec as YAML in the documented format."""
    data = spec.model_dump(mode="json", exclude_defaults=False)
    for budget in data["budgets"]:
        for key in ("monthly", "amount"):
            if budget[key] is None:
                del budget[key]
            else:
                amount = Decimal(budget[key])
                budget[key] = int(amount) if amount == amount.to_integral() else float(amount)
        if budget["period"] == MONTHLY:
            del budget["period"]  # the default, as before periods
    for model in data["models"]:
        model["match"] = {k: v for k, v in model["match"].items() if v}
        for key in ("channel", "description", "gate"):
            if model[key] is None:
                del model[key]
        if "gate" in model:
            model["gate"] = _gate_yaml(model["gate"])
    chargeback = data["chargeback"]
    chargeback["shares"] = {
        team: _plain_number(Decimal(share)) for team, share in chargeback["shares"].items()
    }
    for key in ("pools", "shares"):
        if not chargeback[key]:
            del chargeback[key]
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _plain_number(amount: Decimal) -> int | float:
    return int(amount) if amount == amount.to_integral() else float(amount)


def _gate_yaml(gate: dict[str, Any]) -> dict[str, Any]:
    """Drop unset limits; write amounts and percentages as plain numbers."""
    out: dict[str, Any] = {}
    for key, value in gate.items():
        if value is None:
            continue
        if key in ("max_monthly", "max_unit_cost_rise_pct"):
            amount = Decimal(value)
            value = int(amount) if amount == amount.to_integral() else float(amount)
        out[key] = value
    return out


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
