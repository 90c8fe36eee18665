"""What a resource scan finds: the resource (with a stable identity), its price and the fix.

Later stages (posting, the Stop it / Keep / Not waste buttons, closing findings) key everything
on `ResourceKey` and act on `Resource.target`, so both stay the same from one scan to the next.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

PROTECT_TAG = "mlcost:protect"


class ResourceKind(StrEnum):
    """What sort of resource a finding is about."""

    GPU_INSTANCE = "gpu_instance"
    GPU_FLEET = "gpu_fleet"
    SAGEMAKER_ENDPOINT = "sagemaker_endpoint"
    SAGEMAKER_NOTEBOOK = "sagemaker_notebook"
    SAGEMAKER_TRAINING_JOB = "sagemaker_training_job"
    EBS_VOLUME = "ebs_volume"
    EBS_SNAPSHOT = "ebs_snapshot"
    S3_PREFIX = "s3_prefix"
    EKS_NODE_GROUP = "eks_node_group"
    SAGEMAKER_STUDIO_APP = "sagemaker_studio_app"


class Reason(StrEnum):
    """Why the resource is waste."""

    IDLE = "idle"
    UNDERUSED = "underused"
    OWNER_UNKNOWN = "owner_unknown"
    MODEL_KILLED = "model_killed"
    NO_MODEL_SPEND = "no_model_spend"
    UNTAGGED_FLEET = "untagged_fleet"
    NO_INVOCATIONS = "no_invocations"
    NO_ACTIVITY = "no_activity"
    OVERRUNNING = "overrunning"
    UNATTACHED = "unattached"
    ORPHANED_SNAPSHOT = "orphaned_snapshot"
    STALE_OBJECTS = "stale_objects"
    NO_GPU_PODS = "no_gpu_pods"


class Action(StrEnum):
    """The fix a finding recommends (what a later "Stop it" would do)."""

    STOP_INSTANCES = "stop_instances"
    RIGHTSIZE = "rightsize"
    DELETE_ENDPOINT = "delete_endpoint"
    STOP_NOTEBOOK = "stop_notebook"
    STOP_TRAINING_JOB = "stop_training_job"
    SNAPSHOT_AND_DELETE_VOLUME = "snapshot_and_delete_volume"
    DELETE_SNAPSHOT = "delete_snapshot"
    LIFECYCLE_TO_COLDER_CLASS = "lifecycle_to_colder_class"
    SCALE_NODE_GROUP_TO_ZERO = "scale_node_group_to_zero"
    DELETE_STUDIO_APP = "delete_studio_app"


def own_id(resource_id: str, target: Mapping[str, str], members: tuple[str, ...]) -> set[str]:
    """Return the resource's own id, lower-cased: the ledger bills the resource by that id."""
    return {resource_id.lower()}


@dataclass(frozen=True)
class FindingKind:
    """A kind of resource finding: its name, its label in words, the ledger ids it stands for.

    `ledger_ids(resource_id, target, members)` returns the ledger resource ids (lower-cased)
    whose spend the finding stands for (bot/waste/findings.py lists a resource once).
    """

    kind: str
    label: str
    ledger_ids: Callable[[str, Mapping[str, str], tuple[str, ...]], set[str]] = own_id


@dataclass(frozen=True)
class StopAction:
    """A fix a finding recommends, and what Stop it does for it (said on the post beforehand).

    `advice(target)`, when set, makes the fix one mlcost only recommends: Stop it records the
    approval and replies with the advice, changing nothing in AWS.
    """

    action: str
    words: str
    advice: Callable[[Mapping[str, Any]], str] | None = None


@dataclass(frozen=True, order=True)
class ResourceKey:
    """The identity of a finding across scans: account, region, kind and resource id."""

    account: str
    region: str
    kind: str  # a ResourceKind, or a kind a registered scanner declares
    resource_id: str

    def __str__(self) -> str:
        return f"{self.account}/{self.region}/{self.kind}/{self.resource_id}"


@dataclass(frozen=True)
class Resource:
    """One resource as the scan saw it.

    `resource_type` is the instance type, volume type or storage class; `size` says how big
    (e.g. "500 GiB", "2 × ml.g4dn.xlarge"). `target` is what an action needs: the instance ids,
    endpoint name, volume id, snapshot id, bucket and prefix...; `members` lists a fleet's
    instances.
    """

    kind: str  # a ResourceKind, or a kind a registered scanner declares
    resource_id: str
    account: str
    region: str
    resource_type: str | None = None
    size: str | None = None
    tags: tuple[tuple[str, str], ...] = ()
    model: str | None = None
    team: str | None = None
    target: tuple[tuple[str, str], ...] = ()
    members: tuple[str, ...] = ()

    @property
    def key(self) -> ResourceKey:
        """Return the finding's stable identity."""
        return ResourceKey(self.account, self.region, self.kind, self.resource_id)

    def tag(self, name: str) -> str | None:
        """Return a tag's value, or None."""
        return dict(self.tags).get(name)


@dataclass(frozen=True)
class Price:
    """A monthly cost and where it came from: 'ledger' or 'price table (SOURCE, DATE)'."""

    monthly: Decimal
    source: str


@dataclass(frozen=True)
class Recommendation:
    """The fix, in words and as an action, with what it saves a month."""

    action: str  # an Action, or one a registered scanner declares
    text: str
    monthly_saving: Decimal


@dataclass(frozen=True)
class ResourceFinding:
    """A resource that burns money: why, how much a month, the evidence and the fix."""

    resource: Resource
    reason: str  # a Reason, or one a registered scanner gives
    evidence: str
    signal: str
    monthly_cost: Decimal
    price_source: str
    recommendation: Recommendation
    currency: str = "USD"

    @property
    def key(self) -> ResourceKey:
        """Return the finding's stable identity (the resource's)."""
        return self.resource.key

    @property
    def kind(self) -> str:
        return self.resource.kind

    @property
    def resource_id(self) -> str:
        return self.resource.resource_id

    @property
    def account(self) -> str:
        return self.resource.account

    @property
    def region(self) -> str:
        return self.resource.region

    @property
    def monthly_saving(self) -> Decimal:
        return self.recommendation.monthly_saving

    def to_dict(self) -> dict[str, Any]:
        """Return the finding as JSON-ready values (money as strings, never floats)."""
        r = self.resource
        return {
            "key": str(self.key),
            "kind": str(r.kind),
            "resource_id": r.resource_id,
            "account": r.account,
            "region": r.region,
            "resource_type": r.resource_type,
            "size": r.size,
            "model": r.model,
            "team": r.team,
            "tags": dict(r.tags),
            "target": dict(r.target),
            "members": list(r.members),
            "reason": str(self.reason),
            "evidence": self.evidence,
            "signal": self.signal,
            "monthly_cost": str(self.monthly_cost),
            "price_source": self.price_source,
            "recommendation": {
                "action": str(self.recommendation.action),
                "text": self.recommendation.text,
                "monthly_saving": str(self.recommendation.monthly_saving),
            },
            "currency": self.currency,
        }


def tag_tuple(tags: list[dict[str, str]] | None) -> tuple[tuple[str, str], ...]:
    """Turn AWS's [{'Key': k, 'Value': v}] into a sorted, hashable tuple."""
    return tuple(sorted((t["Key"], t.get("Value", "")) for t in tags or []))


def is_protected(tags: tuple[tuple[str, str], ...]) -> bool:
    """Say whether the operator marked the resource `mlcost:protect` (any value)."""
    return any(k == PROTECT_TAG for k, _ in tags)
