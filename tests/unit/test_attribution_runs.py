"""The training run of a charge: its run tag, a registry-declared run tag key, a SageMaker ARN."""

from bot.ingest.attribution import (
    RUN_MAX_LENGTH,
    AttributionRules,
    Attributor,
    ChargeFacts,
    ModelMatcher,
    attribute,
    normalize_tags,
)

MODELS = [ModelMatcher("recsys", "ranking")]
DEFAULT = AttributionRules.build(
    models=MODELS,
    teams=["ranking"],
    model_tag_keys=["ml:model"],
    stage_tag_keys=["ml:stage"],
    team_tag_keys=["team"],
)
DECLARED = AttributionRules.build(
    models=MODELS,
    teams=["ranking"],
    model_tag_keys=["ml:model"],
    stage_tag_keys=["ml:stage"],
    team_tag_keys=["team"],
    run_tag_keys=["ml:run", "training-job"],
)
SAGEMAKER = "Amazon SageMaker"
JOB_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-job/recsys-v7-2026-11-18"


def facts(tags: dict[str, str], resource_id: str | None = None) -> ChargeFacts:
    return ChargeFacts(
        service=SAGEMAKER,
        tags=normalize_tags(tags),
        usage_type="USE1-Train:ml.p4d.24xlarge",
        resource_id=resource_id,
    )


def test_the_ml_run_tag_names_the_run_and_attribution_is_otherwise_unchanged() -> None:
    result = attribute(facts({"ml:model": "recsys", "ml:run": "sweep-42"}), DEFAULT)
    assert (result.model, result.stage, result.run) == ("recsys", "training", "sweep-42")
    assert attribute(facts({"ml:model": "recsys"}), DEFAULT).run is None


def test_an_opencost_label_and_a_cur_column_fold_to_the_same_run_key() -> None:
    # Kubernetes labels arrive as `ml_run`; CUR columns as `resource_tags_user_ml_run` -> `ml_run`
    for key in ("ml_run", "ML:Run", " ml.run"):
        assert attribute(facts({key: "job-a"}), DEFAULT).run == "job-a", key


def test_a_registry_declared_run_tag_key_is_read_in_its_order() -> None:
    assert attribute(facts({"training-job": "nightly-17"}), DEFAULT).run is None
    assert attribute(facts({"training-job": "nightly-17"}), DECLARED).run == "nightly-17"
    both = facts({"training-job": "nightly-17", "ml:run": "sweep-42"})
    assert attribute(both, DECLARED).run == "sweep-42"  # ml:run is declared first
    # sources read the run keys because attribution says it reads them
    assert {"ml_run", "training_job"} <= DECLARED.tag_keys_used()
    assert "ml_run" in DEFAULT.tag_keys_used()


def test_a_sagemaker_training_job_arn_names_the_run_when_no_tag_does() -> None:
    assert attribute(facts({}, JOB_ARN), DEFAULT).run == "recsys-v7-2026-11-18"
    gov = JOB_ARN.replace("arn:aws:", "arn:aws-us-gov:")
    assert attribute(facts({}, gov), DEFAULT).run == "recsys-v7-2026-11-18"
    # the tag wins over the ARN
    assert attribute(facts({"ml:run": "sweep-42"}, JOB_ARN), DEFAULT).run == "sweep-42"
    # other SageMaker resources are no run
    for other in (
        "arn:aws:sagemaker:us-east-1:123456789012:endpoint/recsys-prod",
        "arn:aws:sagemaker:us-east-1:123456789012:processing-job/features",
        "i-0abc",
    ):
        assert attribute(facts({}, other), DEFAULT).run is None, other


def test_the_memoised_attributor_gives_each_charge_its_own_run() -> None:
    attributor = Attributor(DEFAULT)
    first = attributor(facts({"ml:run": "a"}))
    second = attributor(facts({"ml:run": "b"}))  # same stage facts, another run
    assert (first.run, second.run) == ("a", "b")


def test_an_overlong_run_value_is_clipped_to_the_ledger_column() -> None:
    result = attribute(facts({"ml:run": "x" * 400}), DEFAULT)
    assert result.run == "x" * RUN_MAX_LENGTH
