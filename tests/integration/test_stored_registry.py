"""The registry's attribution read back as stored (bot/registry/stored.py), without pydantic."""

from __future__ import annotations

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from bot.config import AttributionSettings
from bot.db import tables
from bot.errors import RegistryError
from bot.ingest.attribution import NAMESPACE_TAG, StageRule, normalize_tag_key
from bot.registry.stored import (
    attribution_spec,
    cost_explorer_tag_key,
    load_attribution_rules,
    parse_attribution,
)
from tests.support.sample_registry import load_registry

EVERY_FEATURE = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
  - {name: platform, channel: C0PLATFORM, owners: [U0PPP111]}
models:
  - name: recsys
    team: ranking
    owners: [U0AAA111]
    match: {tags: {"ML:Model": [RecSys, recsys-v2], Team: Ranking}, namespace: recsys-prod}
  - name: ingest
    team: platform
    owners: [U0PPP111]
    match:
      resource_ids: ["arn:aws:glue:us-east-1:123456789012:job/nightly"]
      accounts: "123456789012"
      namespace: [etl, etl-staging]
  - {name: idle, team: platform, owners: [U0PPP111]}
attribution:
  model_tag_keys: [workload]
  run_tag_keys: ["ml:run", Name]
  stage_rules:
    - {stage: training, service: "Amazon SageMaker", usage_type: "*Train*"}
    - {stage: data, resource: "*etl*"}
  account_teams: {"210987654321": platform}
"""


def test_every_attribution_feature_reads_back_as_the_file_says(session: Session) -> None:
    load_registry(session, EVERY_FEATURE)
    rules = load_attribution_rules(session)
    recsys, ingest, idle = rules.models
    assert (recsys.name, recsys.team) == ("recsys", "ranking")
    # keys normalised, values lowered, a single value or a namespace as a one-value tuple
    assert recsys.tags == {
        normalize_tag_key("ML:Model"): ("recsys", "recsys-v2"),
        "team": ("ranking",),
        NAMESPACE_TAG: ("recsys-prod",),
    }
    assert ingest.tags == {NAMESPACE_TAG: ("etl", "etl-staging")}
    assert ingest.resource_ids == ("arn:aws:glue:us-east-1:123456789012:job/nightly",)
    assert ingest.accounts == ("123456789012",)
    assert (idle.tags, idle.resource_ids, idle.accounts) == ({}, (), ())
    assert rules.teams == frozenset({"ranking", "platform"})
    assert rules.model_tag_keys == ("workload",)
    # the keys the file leaves out: the spec's defaults (no settings given)
    assert rules.stage_tag_keys == tuple(map(normalize_tag_key, ["ml:stage", "stage"]))
    assert rules.team_tag_keys == ("team",)
    assert rules.run_tag_keys == tuple(map(normalize_tag_key, ["ml:run", "Name"]))
    assert StageRule("training", service="Amazon SageMaker", usage_type="*Train*") in (
        rules.stage_rules
    )
    assert StageRule("data", resource="*etl*") in rules.stage_rules
    assert dict(rules.account_teams) == {"210987654321": "platform"}


def test_tag_keys_the_registry_leaves_out_come_from_the_settings(session: Session) -> None:
    load_registry(session, EVERY_FEATURE)
    settings = AttributionSettings(
        model_tag_keys=["app"], stage_tag_keys=["phase"], team_tag_keys=["owner"]
    )
    spec = attribution_spec(session, defaults=settings)
    assert spec.model_tag_keys == ["workload"]  # the registry names it: the registry wins
    assert spec.stage_tag_keys == ["phase"]
    assert spec.team_tag_keys == ["owner"]
    assert cost_explorer_tag_key(session, settings=settings) == "workload"


def test_a_database_without_a_registry_reads_the_settings(session: Session) -> None:
    settings = AttributionSettings(model_tag_keys=["app"])
    assert attribution_spec(session, defaults=settings).model_tag_keys == ["app"]
    assert cost_explorer_tag_key(session, settings=settings) == "app"
    assert attribution_spec(session).model_tag_keys == ["ml:model", "model"]


@pytest.mark.parametrize(
    ("stored", "named"),
    [
        ({"model_tag_keys": ["workload", 7]}, "attribution.model_tag_keys"),
        ({"stage_rules": [{"stage": "lunch"}]}, "attribution.stage_rules[0]"),
        ({"stage_rules": {"stage": "data"}}, "attribution.stage_rules"),
        ({"account_teams": {"123": 4}}, "attribution.account_teams"),
        ({"model_tags": ["x"]}, "attribution.model_tags"),
        (["workload"], "an attribution section"),
    ],
)
def test_a_stored_attribution_in_the_wrong_shape_is_refused_by_name(
    stored: object, named: str
) -> None:
    with pytest.raises(RegistryError) as refused:
        parse_attribution(stored)
    assert named in str(refused.value)
    assert "mlcost registry import" in str(refused.value)


def test_one_stored_string_is_a_one_key_list() -> None:
    # as the file's own `accounts: "123456789012"` is
    assert parse_attribution({"model_tag_keys": "workload"}).model_tag_keys == ["workload"]


def test_a_model_match_in_the_wrong_shape_is_refused_with_the_models_name(
    session: Session,
) -> None:
    load_registry(session, EVERY_FEATURE)
    session.execute(
        update(tables.models)
        .where(tables.models.c.name == "recsys")
        .values(match={"tags": {"ml:model": {"nested": "x"}}})
    )
    with pytest.raises(RegistryError, match=r"model 'recsys''s match\.tags\.ml:model"):
        load_attribution_rules(session)
