import pytest

from bot.ingest.attribution import (
    SERVING,
    STORAGE,
    TRAINING,
    AttributionRules,
    Attributor,
    ChargeFacts,
    ModelMatcher,
    StageRule,
    attribute,
    normalize_tag_key,
    normalize_tags,
)

RULES = AttributionRules.build(
    models=[
        ModelMatcher("recsys", "ranking"),
        ModelMatcher("checkout-fraud", "risk", tags={"application": ("checkout",)}),
        ModelMatcher("ocr", "vision", resource_ids=("arn:aws:s3:::ocr-*",)),
    ],
    teams=["ranking", "risk", "vision"],
    model_tag_keys=["ml:model", "model"],
    stage_tag_keys=["ml:stage", "stage"],
    team_tag_keys=["team"],
)


def facts(service: str = "Amazon Elastic Compute Cloud", **kw: object) -> ChargeFacts:
    tags = normalize_tags(kw.pop("tags", {}))  # type: ignore[arg-type]
    return ChargeFacts(service=service, tags=tags, **kw)  # type: ignore[arg-type]


def test_tag_keys_fold_across_sources() -> None:
    assert normalize_tag_key("ml:model") == normalize_tag_key("ml_model") == "ml_model"
    assert normalize_tag_key(" CostCenter") == "cost_center"
    assert normalize_tags({"org": "a", " org": "b", "x": None}) == {"org": "a"}


def test_explicit_model_tag_wins_and_brings_team_and_stage() -> None:
    result = attribute(
        facts(tags={"ml:model": "RecSys", "ml:stage": "inference", "team": "risk"}), RULES
    )
    assert (result.model, result.team, result.stage, result.rule) == (
        "recsys",
        "ranking",
        SERVING,
        "tag",
    )


def test_registry_match_rule_claims_untagged_spend() -> None:
    assert attribute(facts(tags={"application": "checkout"}), RULES).model == "checkout-fraud"
    ocr = attribute(
        facts("Amazon Simple Storage Service", resource_id="arn:aws:s3:::ocr-scans"), RULES
    )
    assert (ocr.model, ocr.stage, ocr.rule) == ("ocr", STORAGE, "rule")


def test_unregistered_model_tag_stays_unallocated_but_remembers_the_value() -> None:
    result = attribute(facts(tags={"model": "legacy-ranker", "team": "ranking"}), RULES)
    assert result.model is None
    assert result.model_tag_value == "legacy-ranker"
    assert result.team == "ranking"
    assert result.rule == "unallocated"


def test_stage_rules_from_service_and_usage_type() -> None:
    sm = "Amazon SageMaker"
    assert attribute(facts(sm, usage_type="USE1-Train:ml.p4d.24xlarge"), RULES).stage == TRAINING
    assert attribute(facts(sm, usage_type="USE1-Host:ml.g5.2xlarge"), RULES).stage == SERVING
    assert attribute(facts("AWS Glue"), RULES).stage == "data"
    assert attribute(facts(instance_type="p4d.24xlarge"), RULES).stage == TRAINING
    assert attribute(facts(instance_type="m5.large"), RULES).stage == "other"


def test_custom_stage_rules_run_before_defaults() -> None:
    rules = AttributionRules.build(
        models=[],
        teams=[],
        model_tag_keys=["model"],
        stage_tag_keys=[],
        team_tag_keys=[],
        extra_stage_rules=[StageRule("serving", service="*elastic compute*", gpu=True)],
    )
    assert attribute(facts(instance_type="g5.xlarge"), rules).stage == SERVING


def test_resource_stage_rules_split_one_service_and_are_memoised_per_resource() -> None:
    aml = "Azure Machine Learning"
    ws = "/subscriptions/s/providers/microsoft.machinelearningservices/workspaces/w"
    attributor = Attributor(RULES)
    endpoint = facts(aml, resource_id=f"{ws}/onlineendpoints/ep/deployments/blue")
    cluster = facts(aml, resource_id=f"{ws}/computes/a100-cluster")
    assert attributor(endpoint).stage == SERVING
    assert attributor(cluster).stage == TRAINING
    assert attributor(endpoint).stage == SERVING  # the memo keys on the resource for AML
    rules = AttributionRules.build(
        models=[],
        teams=[],
        model_tag_keys=["model"],
        stage_tag_keys=[],
        team_tag_keys=[],
        extra_stage_rules=[StageRule(STORAGE, resource="*/checkpoints/*")],
    )
    assert attribute(facts("Cloud Storage", resource_id="b/checkpoints/x"), rules).stage == STORAGE


def test_gcp_and_azure_ml_services_get_stages() -> None:
    def stage(service: str, usage: str | None = None, **kw: object) -> str:
        return attribute(facts(service, usage_type=usage, **kw), RULES).stage

    assert stage("Vertex AI", "Custom Training: A2 Instance Core running in Americas") == TRAINING
    assert stage("Vertex AI", "Online Prediction: Nvidia Tesla T4 GPU running in Americas") == (
        SERVING
    )
    assert stage("Kubernetes Engine", "Regional Kubernetes Clusters") == SERVING
    assert stage("Azure Kubernetes Service") == SERVING
    assert stage("Cloud Storage") == STORAGE
    assert stage("Storage Accounts") == STORAGE
    for data_service in (
        "BigQuery",
        "Dataflow",
        "Azure Data Factory v2",
        "Azure Synapse Analytics",
    ):
        assert stage(data_service) == "data"
    assert stage("Compute Engine", instance_type="a3-highgpu-8g") == TRAINING
    assert stage("Virtual Machines", instance_type="Standard_ND96isr_H100_v5") == TRAINING


def test_only_models_with_match_rules_are_asked_to_match_an_untagged_charge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []
    real_matches = ModelMatcher.matches

    def counting(self: ModelMatcher, charge: ChargeFacts) -> bool:
        asked.append(self.name)
        return real_matches(self, charge)

    monkeypatch.setattr(ModelMatcher, "matches", counting)
    tagged_only = [ModelMatcher(f"model-{i:04d}", "ranking") for i in range(2_000)]
    rules = AttributionRules.build(
        models=[*tagged_only[:1_000], *RULES.models, *tagged_only[1_000:]],
        teams=["ranking", "risk", "vision"],
        model_tag_keys=["ml:model"],
        stage_tag_keys=["ml:stage"],
        team_tag_keys=["team"],
    )
    result = Attributor(rules)(facts(tags={"application": "checkout"}))
    assert (result.model, result.rule) == ("checkout-fraud", "rule")
    assert asked == ["checkout-fraud"]  # in registry order: the first with rules matches
    assert Attributor(rules)(facts(tags={"ml:model": "model-1999"})).model == "model-1999"
    assert asked == ["checkout-fraud"]  # a tagged charge asks no rule
