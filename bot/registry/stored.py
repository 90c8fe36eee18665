"""The registry's attribution as stored: read on any Reader, without pydantic or the ORM.

`mlcost registry import` validates the file (bot/registry/spec.py) and stores what it validated;
ingestion, the poll and the scanner read it back here. Reading checks the stored shapes (a list
of strings, a mapping of strings) and refuses anything else with a message that names the key,
instead of validating it all again with pydantic (whose import took about 0.07 s of every
`mlcost ingest`, issue 24).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import select

from bot.config import AttributionSettings
from bot.db import tables
from bot.db.reading import Reader
from bot.errors import RegistryError
from bot.ingest.attribution import (
    DEFAULT_MODEL_TAG_KEYS,
    DEFAULT_RUN_TAG_KEYS,
    DEFAULT_STAGE_TAG_KEYS,
    DEFAULT_TEAM_TAG_KEYS,
    ML_STAGES,
    NAMESPACE_TAG,
    OTHER,
    AttributionRules,
    ModelMatcher,
    StageRule,
)
from bot.ingest.attribution import normalize_tag_key as _norm

TAG_KEY_FIELDS = ("model_tag_keys", "stage_tag_keys", "team_tag_keys")
_STAGE_RULE_FIELDS = ("stage", "service", "usage_type", "category", "resource")
_STAGES = (*ML_STAGES, OTHER)


@dataclass(frozen=True)
class StoredAttribution:
    """The registry's `attribution` section as stored (the defaults, as bot/registry/spec.py's
    AttributionSpec has them, for what it leaves out); `named` is the fields the registry gave."""

    model_tag_keys: list[str] = field(default_factory=lambda: [*DEFAULT_MODEL_TAG_KEYS])
    stage_tag_keys: list[str] = field(default_factory=lambda: [*DEFAULT_STAGE_TAG_KEYS])
    team_tag_keys: list[str] = field(default_factory=lambda: [*DEFAULT_TEAM_TAG_KEYS])
    run_tag_keys: list[str] = field(default_factory=lambda: [*DEFAULT_RUN_TAG_KEYS])
    stage_rules: list[StageRule] = field(default_factory=list)
    account_teams: dict[str, str] = field(default_factory=dict)
    named: frozenset[str] = frozenset()


class StoredRegistryError(RegistryError):
    """The stored registry is not in the shape `mlcost registry import` writes."""

    def __init__(self, where: str, expected: str) -> None:
        super().__init__(
            f"the registry stored in the database has {where} that is not {expected}: "
            "import the registry file again (`mlcost registry import FILE`)"
        )


def _strings(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise StoredRegistryError(where, "a list of strings")
    return list(value)


def _string_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise StoredRegistryError(where, "a mapping of strings")
    return dict(value)


def _stage_rule(value: Any, where: str) -> StageRule:
    if (
        not isinstance(value, Mapping)
        or set(value) - set(_STAGE_RULE_FIELDS)
        or value.get("stage") not in _STAGES
        or not all(isinstance(value.get(k), str | None) for k in _STAGE_RULE_FIELDS[1:])
    ):
        raise StoredRegistryError(where, "a stage rule (a stage and service/usage_type globs)")
    return StageRule(**value)


def parse_attribution(value: Any) -> StoredAttribution:
    """Return a stored `attribution` value, its shapes checked."""
    if not isinstance(value, Mapping):
        raise StoredRegistryError("an attribution section", "a mapping")
    known = {f for f in StoredAttribution.__dataclass_fields__ if f != "named"}
    unknown = sorted(set(value) - known)
    if unknown:
        raise StoredRegistryError(f"attribution.{unknown[0]}", "an attribution setting")
    given: dict[str, Any] = {}
    for name in (*TAG_KEY_FIELDS, "run_tag_keys"):
        if name in value:
            given[name] = _strings(value[name], f"attribution.{name}")
    if "stage_rules" in value:
        rules = value["stage_rules"]
        if not isinstance(rules, list):
            raise StoredRegistryError("attribution.stage_rules", "a list")
        given["stage_rules"] = [
            _stage_rule(rule, f"attribution.stage_rules[{i}]") for i, rule in enumerate(rules)
        ]
    if "account_teams" in value:
        given["account_teams"] = _string_map(value["account_teams"], "attribution.account_teams")
    return StoredAttribution(**given, named=frozenset(value))


def attribution_spec(
    reader: Reader, *, defaults: AttributionSettings | None = None
) -> StoredAttribution:
    """Return the registry's attribution; the tag keys it does not name come from `defaults`.

    MLCOST_MODEL_TAG_KEYS, MLCOST_STAGE_TAG_KEYS and MLCOST_TEAM_TAG_KEYS are those defaults: the
    registry file's `attribution` wins over each one it names. (A registry imported before this
    was stored with every key list filled in, so it names them all until it is imported again.)
    """
    value = reader.scalar(
        select(tables.registry_settings.c.value).where(
            tables.registry_settings.c.key == "attribution"
        )
    )
    spec = parse_attribution(value if value is not None else {})
    if defaults is None:
        return spec
    unnamed: dict[str, Any] = {
        name: list(getattr(defaults, name)) for name in TAG_KEY_FIELDS if name not in spec.named
    }
    return replace(spec, **unnamed)


def cost_explorer_tag_key(reader: Reader, *, settings: AttributionSettings) -> str:
    """Return the model tag key Cost Explorer groups by: the first model tag key attribution reads.

    The key is returned as written (Cost Explorer matches the raw key, not a normalised one).
    """
    keys = attribution_spec(reader, defaults=settings).model_tag_keys
    return keys[0] if keys else settings.model_tag_keys[0]


def model_matcher(name: str, team: str, match: Any) -> ModelMatcher:
    """Return a model's matcher from its stored `match` (tags, namespace, resource ids,
    accounts), its shapes checked."""
    if match is None:
        match = {}
    where = f"model {name!r}'s match"
    if not isinstance(match, Mapping) or set(match) - {
        "tags",
        "resource_ids",
        "accounts",
        "namespace",
    }:
        raise StoredRegistryError(where, "a match (tags, resource_ids, accounts, namespace)")
    raw_tags = match.get("tags") or {}
    if not isinstance(raw_tags, Mapping):
        raise StoredRegistryError(f"{where}.tags", "a mapping")
    tags = {
        _norm(str(k)): tuple(x.lower() for x in _strings(v, f"{where}.tags.{k}"))
        for k, v in raw_tags.items()
    }
    namespaces = _strings(match.get("namespace") or [], f"{where}.namespace")
    if namespaces:
        tags[NAMESPACE_TAG] = tuple(n.lower() for n in namespaces)
    return ModelMatcher(
        name=name,
        team=team,
        tags=tags,
        resource_ids=tuple(_strings(match.get("resource_ids") or [], f"{where}.resource_ids")),
        accounts=tuple(_strings(match.get("accounts") or [], f"{where}.accounts")),
    )


def load_attribution_rules(
    reader: Reader, *, defaults: AttributionSettings | None = None
) -> AttributionRules:
    """Build attribution rules from the registry stored in the database (tag keys it does not
    name: `defaults`, the settings')."""
    spec = attribution_spec(reader, defaults=defaults)
    models, teams = tables.models, tables.teams
    rows = reader.execute(
        select(models.c.name, teams.c.name, models.c.match)
        .join_from(models, teams, models.c.team_id == teams.c.id)
        .order_by(models.c.id)
    )
    return AttributionRules.build(
        models=[model_matcher(name, team, match) for name, team, match in rows],
        teams=reader.scalars(select(teams.c.name)),
        model_tag_keys=spec.model_tag_keys,
        stage_tag_keys=spec.stage_tag_keys,
        team_tag_keys=spec.team_tag_keys,
        run_tag_keys=spec.run_tag_keys,
        extra_stage_rules=spec.stage_rules,
        account_teams=spec.account_teams,
    )
