"""Attribute a charge to a model, a stage and a team; what matches nothing is unallocated."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from bot.ingest.gpu import gpu_count

TRAINING, SERVING, STORAGE, DATA, OTHER = "training", "serving", "storage", "data", "other"
ML_STAGES = (TRAINING, SERVING, STORAGE, DATA)
RUN_MAX_LENGTH = 256  # the ledger's run column (AWS tag values are at most 256 characters)
# The attribution of idle cluster capacity (OpenCost's `__idle__`): its own line, never spread.
IDLE = "idle"
# The tag a Kubernetes charge's namespace is fed to attribution under (registry `namespace:`).
NAMESPACE_TAG = "kubernetes_namespace"

_STAGE_ALIASES = {
    TRAINING: (
        "training",
        "train",
        "finetune",
        "fine-tune",
        "fine-tuning",
        "finetuning",
        "pretraining",
        "pretrain",
        "experiment",
        "experiments",
        "research",
        "hpo",
    ),
    SERVING: (
        "serving",
        "serve",
        "inference",
        "infer",
        "endpoint",
        "endpoints",
        "online",
        "prediction",
        "predict",
        "hosting",
        "realtime",
        "batch-inference",
    ),
    STORAGE: ("storage", "checkpoints", "checkpoint", "artifacts", "models", "registry"),
    DATA: (
        "data",
        "etl",
        "features",
        "feature",
        "feature-store",
        "preprocessing",
        "ingest",
        "ingestion",
        "labeling",
        "labelling",
        "pipeline",
    ),
}
_ALIAS_TO_STAGE = {alias: stage for stage, aliases in _STAGE_ALIASES.items() for alias in aliases}

# A SageMaker training job's ARN, as billing carries it in the resource id: the name is the run.
_TRAINING_JOB_ARN_RE = re.compile(
    r"^arn:aws[a-z-]*:sagemaker:[^:]*:[^:]*:training-job/(?P<name>[^/]+)$"
)
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_WORD_RE = re.compile(r"[^a-z0-9]+")


def normalize_tag_key(key: str) -> str:
    """Fold a tag key so `ml:model`, ` ML Model` and CUR's `ml_model` compare equal."""
    snake = _CAMEL_RE.sub("_", key.strip())
    return _NON_WORD_RE.sub("_", snake.lower()).strip("_")


def normalize_tags(raw: Mapping[str, object] | None) -> dict[str, str]:
    """Normalise tag keys and values; the first of two colliding keys wins."""
    tags: dict[str, str] = {}
    if not raw:
        return tags
    for key, value in raw.items():
        if value is None:
            continue
        norm = normalize_tag_key(str(key))
        text = "true" if value is True else str(value).strip()
        if norm and text and norm not in tags:
            tags[norm] = text
    return tags


def stage_from_alias(value: str | None) -> str | None:
    """Map a stage tag value such as `inference` or `train` to one of the four stages."""
    if not value:
        return None
    return _ALIAS_TO_STAGE.get(value.strip().lower())


# The tag keys read when neither the registry file nor the settings name others (the registry's
# spec, its stored form and the resource scan take these; MLCOST_*_TAG_KEYS default to the same).
DEFAULT_MODEL_TAG_KEYS = ("ml:model", "model")
DEFAULT_STAGE_TAG_KEYS = ("ml:stage", "stage")
DEFAULT_TEAM_TAG_KEYS = ("team",)
DEFAULT_RUN_TAG_KEYS = ("ml:run",)


@dataclass(frozen=True)
class StageRule:
    """Assign a stage to charges whose service / usage type / category / resource match (globs)."""

    stage: str
    service: str | None = None
    usage_type: str | None = None
    category: str | None = None
    gpu: bool | None = None
    resource: str | None = None

    def matches(self, charge: ChargeFacts) -> bool:
        """Return whether every given field of the rule matches the charge."""
        checks = (
            (self.service, charge.service),
            (self.usage_type, charge.usage_type),
            (self.category, charge.service_category),
            (self.resource, charge.resource_id),
        )
        for pattern, value in checks:
            if pattern is not None and not fnmatch.fnmatch((value or "").lower(), pattern.lower()):
                return False
        return self.gpu is None or self.gpu == (gpu_count(charge.instance_type) > 0)


# Service names as each provider's FOCUS export writes them (AWS "Amazon SageMaker", Google Cloud
# "Vertex AI" / "Kubernetes Engine" / "Cloud Storage", Microsoft "Azure Machine Learning" /
# "Storage Accounts"); the first rule that matches wins.
DEFAULT_STAGE_RULES: tuple[StageRule, ...] = (
    StageRule(TRAINING, service="*sagemaker*", usage_type="*train*"),
    StageRule(SERVING, service="*sagemaker*", usage_type="*host*"),
    StageRule(SERVING, service="*sagemaker*", usage_type="*inference*"),
    StageRule(SERVING, service="*sagemaker*", usage_type="*endpoint*"),
    StageRule(DATA, service="*sagemaker*", usage_type="*processing*"),
    StageRule(STORAGE, service="*sagemaker*", usage_type="*storage*"),
    StageRule(TRAINING, service="*sagemaker*", usage_type="*notebook*"),
    StageRule(SERVING, service="*bedrock*"),
    # Vertex AI: its SKUs say what they meter ("Online Prediction", "Custom Training", ...).
    StageRule(SERVING, service="vertex ai*", usage_type="*predict*"),
    StageRule(SERVING, service="vertex ai*", usage_type="*endpoint*"),
    StageRule(DATA, service="vertex ai*", usage_type="*feature*"),
    StageRule(STORAGE, service="vertex ai*", usage_type="*storage*"),
    StageRule(TRAINING, service="vertex ai*"),
    # Azure Machine Learning: managed online and batch endpoints serve; compute clusters train.
    StageRule(SERVING, service="*machine learning*", resource="*/onlineendpoints/*"),
    StageRule(SERVING, service="*machine learning*", resource="*/batchendpoints/*"),
    StageRule(SERVING, service="*machine learning*", usage_type="*inference*"),
    StageRule(TRAINING, service="*machine learning*"),
    StageRule(STORAGE, service="*simple storage service*"),
    StageRule(STORAGE, service="amazons3*"),
    StageRule(STORAGE, service="*elastic file system*"),
    StageRule(STORAGE, service="*fsx*"),
    StageRule(STORAGE, service="*glacier*"),
    StageRule(STORAGE, usage_type="*ebs:*"),
    StageRule(STORAGE, service="cloud storage"),
    StageRule(STORAGE, service="filestore"),
    StageRule(STORAGE, service="storage accounts"),
    StageRule(STORAGE, service="*blob storage*"),
    StageRule(STORAGE, service="*netapp files*"),
    StageRule(STORAGE, category="storage"),
    StageRule(DATA, service="*glue*"),
    StageRule(DATA, service="*emr*"),
    StageRule(DATA, service="*elastic mapreduce*"),
    StageRule(DATA, service="*kinesis*"),
    StageRule(DATA, service="*athena*"),
    StageRule(DATA, service="*redshift*"),
    StageRule(DATA, service="*data pipeline*"),
    StageRule(DATA, service="*msk*"),
    StageRule(DATA, service="bigquery*"),
    StageRule(DATA, service="dataflow"),
    StageRule(DATA, service="dataproc*"),
    StageRule(DATA, service="cloud pub/sub"),
    StageRule(DATA, service="*data factory*"),
    StageRule(DATA, service="*synapse*"),
    StageRule(DATA, service="*databricks*"),
    StageRule(DATA, service="*event hubs*"),
    StageRule(DATA, category="analytics"),
    StageRule(DATA, category="databases"),
    StageRule(SERVING, service="*load balancing*"),
    StageRule(SERVING, service="*api gateway*"),
    StageRule(STORAGE, service="kubernetes", usage_type="*unmounted*"),
    StageRule(TRAINING, service="kubernetes", usage_type="*gpu*"),
    # Managed Kubernetes control planes (GKE, AKS) mostly host long-running services; their GPU
    # nodes are billed as VMs (Compute Engine, Virtual Machines) and fall to the GPU rule below.
    StageRule(SERVING, service="kubernetes engine"),
    StageRule(SERVING, service="azure kubernetes service"),
    StageRule(TRAINING, gpu=True),
)


@dataclass(frozen=True)
class ModelMatcher:
    """A registered model and the rules that claim untagged charges for it."""

    name: str
    team: str
    tags: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    resource_ids: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()

    @property
    def _accounts(self) -> frozenset[str]:
        return frozenset(a.lower() for a in self.accounts)

    @property
    def has_rules(self) -> bool:
        """Return whether the model declares any match rule."""
        return bool(self.tags or self.resource_ids or self.accounts)

    def matches(self, charge: ChargeFacts) -> bool:
        """Return whether all of the model's rules match the charge."""
        if not self.has_rules:
            return False
        for key, allowed in self.tags.items():
            value = charge.tags.get(key)
            if value is None:
                return False
            if "*" not in allowed and value.lower() not in allowed:
                return False
        if self.resource_ids and not any(
            fnmatch.fnmatch(charge.resource_id or "", pattern) for pattern in self.resource_ids
        ):
            return False
        wanted = self._accounts
        return not wanted or any(key in wanted for key in account_keys(charge))


def account_keys(charge: ChargeFacts) -> list[str]:
    """Return the ids a registry account rule may name for a charge, folded, usage account first.

    The usage account (AWS linked account, Google Cloud project, Azure subscription) and the
    billing account (a payer's id claims its linked accounts); an Azure `/subscriptions/<id>`
    also by its bare id.
    """
    keys: dict[str, None] = {}
    for account in (charge.sub_account, charge.billing_account):
        if account:
            keys[account.lower()] = None
            keys[account.rstrip("/").rsplit("/", 1)[-1].lower()] = None
    return list(keys)


@dataclass(frozen=True)
class ChargeFacts:
    """What attribution may look at for one charge."""

    service: str
    tags: Mapping[str, str]
    service_category: str | None = None
    usage_type: str | None = None
    resource_id: str | None = None
    instance_type: str | None = None
    billing_account: str | None = None
    sub_account: str | None = None
    idle: bool = False  # idle cluster capacity: attributed to no one, on its own line


@dataclass(frozen=True)
class Attribution:
    model: str | None
    stage: str
    team: str | None
    model_tag_value: str | None
    rule: str
    run: str | None = None


@dataclass(frozen=True)
class AttributionRules:
    """Everything attribution needs, as plain values (built from the registry)."""

    models: tuple[ModelMatcher, ...] = ()
    teams: frozenset[str] = frozenset()
    model_tag_keys: tuple[str, ...] = ("ml_model", "model")
    stage_tag_keys: tuple[str, ...] = ("ml_stage", "stage")
    team_tag_keys: tuple[str, ...] = ("team",)
    run_tag_keys: tuple[str, ...] = ("ml_run",)
    stage_rules: tuple[StageRule, ...] = DEFAULT_STAGE_RULES
    # usage or billing account (folded) -> the team its spend goes to when no model claims it
    account_teams: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        models: Iterable[ModelMatcher],
        teams: Iterable[str],
        model_tag_keys: Iterable[str],
        stage_tag_keys: Iterable[str],
        team_tag_keys: Iterable[str],
        extra_stage_rules: Iterable[StageRule] = (),
        run_tag_keys: Iterable[str] = DEFAULT_RUN_TAG_KEYS,
        account_teams: Mapping[str, str] | None = None,
    ) -> AttributionRules:
        """Build rules with tag keys normalised; custom stage rules run before the defaults."""
        return cls(
            models=tuple(models),
            teams=frozenset(teams),
            model_tag_keys=tuple(normalize_tag_key(k) for k in model_tag_keys),
            stage_tag_keys=tuple(normalize_tag_key(k) for k in stage_tag_keys),
            team_tag_keys=tuple(normalize_tag_key(k) for k in team_tag_keys),
            run_tag_keys=tuple(normalize_tag_key(k) for k in run_tag_keys),
            stage_rules=(*extra_stage_rules, *DEFAULT_STAGE_RULES),
            account_teams={k.lower(): v for k, v in (account_teams or {}).items()},
        )

    def tag_keys_used(self) -> set[str]:
        """Return every normalised tag key attribution reads, so sources read only those."""
        keys = {
            *self.model_tag_keys,
            *self.stage_tag_keys,
            *self.team_tag_keys,
            *self.run_tag_keys,
        }
        for model in self.models:
            keys.update(model.tags)
        return keys

    def _by_name(self) -> dict[str, ModelMatcher]:
        return {m.name.lower(): m for m in self.models}

    @cached_property
    def models_with_rules(self) -> tuple[ModelMatcher, ...]:
        """Return the models that declare match rules, in registry order (the others match no
        charge by rule: with 2,000 models, most are claimed by their tag alone)."""
        return tuple(m for m in self.models if m.has_rules)


def _first_tag(tags: Mapping[str, str], keys: Iterable[str]) -> str | None:
    for key in keys:
        value = tags.get(key)
        if value:
            return value
    return None


def training_run(charge: ChargeFacts, rules: AttributionRules) -> str | None:
    """Return the charge's training run: its run tag, else a SageMaker training job's name."""
    tagged = _first_tag(charge.tags, rules.run_tag_keys)
    if tagged:
        return tagged[:RUN_MAX_LENGTH]
    found = _TRAINING_JOB_ARN_RE.match(charge.resource_id or "")
    return found["name"][:RUN_MAX_LENGTH] if found else None


def rule_stage(charge: ChargeFacts, rules: AttributionRules) -> str:
    """Return the stage of the first stage rule the charge matches, or `other`."""
    rule = next((r for r in rules.stage_rules if r.matches(charge)), None)
    return rule.stage if rule else OTHER


def attribute(
    charge: ChargeFacts,
    rules: AttributionRules,
    by_name: Mapping[str, ModelMatcher] | None = None,
    stage_of: Callable[[ChargeFacts], str] | None = None,
) -> Attribution:
    """Attribute one charge: explicit tags first, then registry match rules, then stage rules.

    Without a model, the team is the team tag's, else the one the registry gives the account.

    Idle cluster capacity is no one's: model and team stay empty, the stage is `other`.
    """
    if charge.idle:
        return Attribution(model=None, stage=OTHER, team=None, model_tag_value=None, rule=IDLE)
    models = by_name if by_name is not None else rules._by_name()
    tag_value = _first_tag(charge.tags, rules.model_tag_keys)
    model: ModelMatcher | None = None
    how = "unallocated"
    if tag_value is not None:
        model = models.get(tag_value.lower())
        if model is not None:
            how = "tag"
    if model is None:
        model = next((m for m in rules.models_with_rules if m.matches(charge)), None)
        if model is not None:
            how = "rule"

    stage = stage_from_alias(_first_tag(charge.tags, rules.stage_tag_keys))
    if stage is None:
        stage = stage_of(charge) if stage_of else rule_stage(charge, rules)

    team: str | None
    if model is not None:
        team = model.team
    else:
        team_tag = _first_tag(charge.tags, rules.team_tag_keys)
        team = next((t for t in rules.teams if team_tag and t.lower() == team_tag.lower()), None)
        if team is None and rules.account_teams:
            team = next(
                (rules.account_teams[k] for k in account_keys(charge) if k in rules.account_teams),
                None,
            )
    return Attribution(
        model=model.name if model else None,
        stage=stage,
        team=team,
        model_tag_value=tag_value,
        rule=how,
        run=training_run(charge, rules),
    )


class Attributor:
    """Attribute many charges with the lookup tables built once and stage rules memoised."""

    def __init__(self, rules: AttributionRules) -> None:
        self.rules = rules
        self._by_name = rules._by_name()
        self._stages: dict[tuple[str | None, ...], str] = {}
        self._resource_services = [
            (rule.service or "*").lower() for rule in rules.stage_rules if rule.resource
        ]
        self._by_resource: dict[str, bool] = {}

    def __call__(self, charge: ChargeFacts) -> Attribution:
        return attribute(charge, self.rules, self._by_name, self._rule_stage)

    def _rule_stage(self, charge: ChargeFacts) -> str:
        # Stage rules read only these fields; many charges share them.
        key: tuple[str | None, ...] = (
            charge.service,
            charge.usage_type,
            charge.service_category,
            charge.instance_type,
        )
        if self._reads_resource(charge.service):
            key += (charge.resource_id,)
        stage = self._stages.get(key)
        if stage is None:
            stage = self._stages[key] = rule_stage(charge, self.rules)
        return stage

    def _reads_resource(self, service: str) -> bool:
        # Only a rule with a resource pattern makes the resource part of the memo key.
        found = self._by_resource.get(service)
        if found is None:
            name = (service or "").lower()
            found = any(fnmatch.fnmatch(name, p) for p in self._resource_services)
            self._by_resource[service] = found
        return found
