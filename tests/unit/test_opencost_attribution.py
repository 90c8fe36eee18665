"""Idle cluster capacity, namespaces as tags, and OpenCost windows: pure checks."""

from __future__ import annotations

import datetime as dt

import yaml

from bot.ingest.attribution import (
    IDLE,
    NAMESPACE_TAG,
    AttributionRules,
    ChargeFacts,
    ModelMatcher,
    attribute,
)
from bot.ingest.sources.opencost import _allocation_tags, _days, opencost_window, request_url
from bot.registry.spec import parse_registry, registry_to_yaml

RULES = AttributionRules.build(
    models=[
        ModelMatcher("recsys", "ranking", tags={"ml_model": ("recsys",)}),
        ModelMatcher("trainer", "ranking", tags={NAMESPACE_TAG: ("recsys-train",)}),
    ],
    teams=["ranking", "platform"],
    model_tag_keys=["ml:model"],
    stage_tag_keys=["ml:stage", "stage"],
    team_tag_keys=["team"],
)


def test_idle_capacity_is_no_ones_whatever_its_tags_say() -> None:
    tags = {"ml_model": "recsys", "team": "ranking", "stage": "training"}
    result = attribute(ChargeFacts(service="Kubernetes", tags=tags, idle=True), RULES)
    assert (result.model, result.team, result.stage, result.rule) == (None, None, "other", IDLE)


def test_a_namespace_rule_claims_the_namespace_and_labels_win_over_it() -> None:
    in_namespace = ChargeFacts(service="Kubernetes", tags={NAMESPACE_TAG: "recsys-train"})
    assert attribute(in_namespace, RULES).model == "trainer"
    labelled = ChargeFacts(
        service="Kubernetes", tags={NAMESPACE_TAG: "recsys-train", "ml_model": "recsys"}
    )
    assert (attribute(labelled, RULES).model, attribute(labelled, RULES).rule) == ("recsys", "tag")
    elsewhere = ChargeFacts(service="Kubernetes", tags={NAMESPACE_TAG: "default"})
    assert attribute(elsewhere, RULES).model is None


def test_labels_and_annotations_become_tags_with_the_namespace_its_own_key() -> None:
    props = {
        "namespace": "recsys-train",
        "labels": {"ml.model": "recsys", "namespace": "not-the-namespace"},
        "annotations": {"ml_run": "run-7", "team": "platform"},
        "namespaceLabels": {"team": "ranking", "stage": "training"},
    }
    assert _allocation_tags(props, "recsys-train") == {
        "ml_model": "recsys",
        "namespace": "not-the-namespace",
        "ml_run": "run-7",
        "team": "platform",  # the pod's own annotation before its namespace's label
        "stage": "training",
        NAMESPACE_TAG: "recsys-train",
    }


def test_the_registry_namespace_key_parses_and_exports() -> None:
    text = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - {name: trainer, team: ranking, match: {namespace: recsys-train}}
  - {name: search, team: ranking, match: {namespace: [search-a, search-b]}}
"""
    spec = parse_registry(text)
    assert spec.models[0].match.namespace == "recsys-train"
    exported = yaml.safe_load(registry_to_yaml(spec))
    assert [m["match"] for m in exported["models"]] == [
        {"namespace": "recsys-train"},
        {"namespace": ["search-a", "search-b"]},
    ]


def test_windows_and_days() -> None:
    assert opencost_window(dt.date(2026, 11, 1), dt.date(2026, 11, 8)) == (
        "2026-11-01T00:00:00Z,2026-11-08T00:00:00Z"
    )
    midnight = {"start": "2026-11-03T00:00:00Z", "end": "2026-11-04T00:00:00Z"}
    assert _days(midnight, "a", "f") == (dt.date(2026, 11, 3), dt.date(2026, 11, 4))
    # the day of the window's own time zone, not of UTC
    local = {"start": "2026-11-03T00:00:00+02:00", "end": "2026-11-04T00:00:00+02:00"}
    assert _days(local, "a", "f") == (dt.date(2026, 11, 3), dt.date(2026, 11, 4))
    partial = {"start": "2026-11-03T11:02:46Z", "end": "2026-11-05T11:02:46Z"}
    assert _days(partial, "a", "f") == (dt.date(2026, 11, 3), dt.date(2026, 11, 6))


def test_a_base_url_asks_the_allocation_endpoint() -> None:
    url = request_url("https://opencost.example:9003/", "7d", "namespace,pod")
    assert url == (
        "https://opencost.example:9003/allocation?window=7d&aggregate=namespace%2Cpod"
        "&step=1d&accumulate=false&includeIdle=true&shareIdle=false&idleByNode=true"
    )
    assert request_url("http://oc/cloudCost", "7d") == "http://oc/cloudCost?window=7d"
