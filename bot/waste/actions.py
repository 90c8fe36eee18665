"""What "Stop it" does in AWS, once approved: only when enabled, never to a protected resource.

The resource's tags are read again from AWS at the moment of acting, and again after any wait
before the destructive call (a snapshot before deleting a volume): a `mlcost:protect` tag added
since the scan, or during the wait, refuses the action. S3 prefixes are never changed (a
lifecycle rule is a recommendation). Every AWS call made is listed in the result, for the audit log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bot.waste.catalog import stop_action
from bot.waste.scan.model import Action, is_protected, tag_tuple

log = logging.getLogger(__name__)

SNAPSHOT_WAIT_DELAY_SECONDS = 15
SNAPSHOT_WAIT_MAX_ATTEMPTS = 80  # 20 minutes, then the volume is kept and the result says so


class Outcome(StrEnum):
    """How a Stop it ended."""

    DONE = "done"
    REFUSED = "refused"
    DISABLED = "disabled"
    FAILED = "failed"
    RECOMMEND_ONLY = "recommend-only"


@dataclass(frozen=True)
class ActionResult:
    """What Stop it did: the outcome, a sentence for people, the AWS calls and error code."""

    outcome: Outcome
    text: str
    error_code: str | None = None
    calls: tuple[str, ...] = field(default=())

    @property
    def summary(self) -> str:
        """Return the short form kept on the finding: `done: ...`, `failed: CODE`, ..."""
        if self.outcome is Outcome.FAILED:
            return f"failed: {self.error_code or 'error'}"
        if self.outcome is Outcome.REFUSED:
            return "refused: protected"
        if self.outcome is Outcome.DISABLED:
            return "disabled: approval recorded only"
        if self.outcome is Outcome.RECOMMEND_ONLY:
            return "recommend-only: approval recorded only"
        return self.text


DISABLED_TEXT = (
    "approval recorded only: actions are disabled (MLCOST_ACTIONS_ENABLED is not true), so "
    "nothing was changed in AWS."
)


class ProtectedDuringWait(Exception):
    """The resource was tagged mlcost:protect while Stop it waited (for a snapshot)."""


class _Calls:
    """Record each AWS call made (service.Operation) for the audit log."""

    def __init__(self) -> None:
        self.made: list[str] = []

    def __call__(self, name: str, fn: Callable[..., Any], **params: Any) -> Any:
        self.made.append(name)
        return fn(**params)


def recommend_only_advice(action: str, target: dict[str, Any]) -> str | None:
    """Return what to do by hand for a fix mlcost only recommends (None: Stop it acts).

    The fix's scanner declares it (StopAction.advice): mlcost writes no S3 lifecycle rule,
    scales no cluster's node group (its autoscaler and the workloads' owners decide) and deletes
    no one's Studio app.
    """
    stop = stop_action(action)
    return stop.advice(target) if stop is not None and stop.advice is not None else None


def perform_stop(
    aws: Callable[..., Any],
    *,
    action: str,
    region: str,
    target: dict[str, Any],
    enabled: bool,
    wait_delay: int = SNAPSHOT_WAIT_DELAY_SECONDS,
    wait_attempts: int = SNAPSHOT_WAIT_MAX_ATTEMPTS,
) -> ActionResult:
    """Carry out an approved Stop it for one finding; never raises for an AWS error."""
    from botocore.exceptions import BotoCoreError, ClientError, WaiterError

    advice = recommend_only_advice(action, target)
    if advice is not None:
        return ActionResult(Outcome.RECOMMEND_ONLY, f"approval recorded only: {advice}")
    if not enabled:
        return ActionResult(Outcome.DISABLED, DISABLED_TEXT)
    calls = _Calls()
    try:
        protected = _protected(aws, calls, action, region, target)
        if protected:
            return ActionResult(
                Outcome.REFUSED,
                f"refused: {', '.join(protected)} carries the mlcost:protect tag (read from AWS "
                "just now), so nothing was changed.",
                calls=tuple(calls.made),
            )
        text = _act(aws, calls, action, region, target, wait_delay, wait_attempts)
    except ProtectedDuringWait as exc:
        return ActionResult(Outcome.REFUSED, f"refused: {exc}", calls=tuple(calls.made))
    except WaiterError as exc:
        log.warning("stop %s in %s: snapshot not completed: %s", target, region, exc)
        return ActionResult(
            Outcome.FAILED,
            "failed: the snapshot did not complete in time, so the volume was kept; "
            "delete it once the snapshot shows completed.",
            error_code="SnapshotNotCompleted",
            calls=tuple(calls.made),
        )
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = str(error.get("Code") or "error")
        log.warning("stop %s in %s failed: %s %s", target, region, code, error.get("Message"))
        return ActionResult(
            Outcome.FAILED,
            f"failed: AWS refused {calls.made[-1] if calls.made else 'the call'} with {code}: "
            f"{error.get('Message', '')}".rstrip(": "),
            error_code=code,
            calls=tuple(calls.made),
        )
    except BotoCoreError as exc:
        log.warning("stop %s in %s failed: %s", target, region, exc)
        return ActionResult(
            Outcome.FAILED,
            f"failed: {type(exc).__name__}",
            error_code=type(exc).__name__,
            calls=tuple(calls.made),
        )
    return ActionResult(Outcome.DONE, f"done: {text}", calls=tuple(calls.made))


def _instance_ids(target: dict[str, Any]) -> list[str]:
    if target.get("instance_ids"):
        return [i for i in str(target["instance_ids"]).split(",") if i]
    return [str(target["instance_id"])]


def _protected(
    aws: Callable[..., Any], calls: _Calls, action: str, region: str, target: dict[str, Any]
) -> list[str]:
    """Return the ids of the target's resources that carry mlcost:protect now."""
    if action in (Action.STOP_INSTANCES, Action.RIGHTSIZE):
        ec2 = aws("ec2", region)
        found: list[str] = []
        reply = calls(
            "ec2.DescribeInstances", ec2.describe_instances, InstanceIds=_instance_ids(target)
        )
        for reservation in reply.get("Reservations", []):
            for inst in reservation.get("Instances", []):
                if is_protected(tag_tuple(inst.get("Tags"))):
                    found.append(inst["InstanceId"])
        return found
    if action == Action.SNAPSHOT_AND_DELETE_VOLUME:
        ec2 = aws("ec2", region)
        vid = str(target["volume_id"])
        reply = calls("ec2.DescribeVolumes", ec2.describe_volumes, VolumeIds=[vid])
        vols = reply.get("Volumes", [])
        return [vid] if any(is_protected(tag_tuple(v.get("Tags"))) for v in vols) else []
    if action == Action.DELETE_SNAPSHOT:
        ec2 = aws("ec2", region)
        sid = str(target["snapshot_id"])
        reply = calls("ec2.DescribeSnapshots", ec2.describe_snapshots, SnapshotIds=[sid])
        snaps = reply.get("Snapshots", [])
        return [sid] if any(is_protected(tag_tuple(s.get("Tags"))) for s in snaps) else []
    sm = aws("sagemaker", region)
    if action == Action.DELETE_ENDPOINT:
        name = str(target["endpoint_name"])
        arn = calls("sagemaker.DescribeEndpoint", sm.describe_endpoint, EndpointName=name)[
            "EndpointArn"
        ]
    elif action == Action.STOP_NOTEBOOK:
        name = str(target["notebook_instance_name"])
        arn = calls(
            "sagemaker.DescribeNotebookInstance",
            sm.describe_notebook_instance,
            NotebookInstanceName=name,
        )["NotebookInstanceArn"]
    elif action == Action.STOP_TRAINING_JOB:
        name = str(target["training_job_name"])
        arn = calls(
            "sagemaker.DescribeTrainingJob", sm.describe_training_job, TrainingJobName=name
        )["TrainingJobArn"]
    else:
        raise ValueError(f"no Stop it for action {action}")
    tags = calls("sagemaker.ListTags", sm.list_tags, ResourceArn=arn).get("Tags")
    return [name] if is_protected(tag_tuple(tags)) else []


def _act(
    aws: Callable[..., Any],
    calls: _Calls,
    action: str,
    region: str,
    target: dict[str, Any],
    wait_delay: int,
    wait_attempts: int,
) -> str:
    """Make the change; return what was done, in words."""
    if action in (Action.STOP_INSTANCES, Action.RIGHTSIZE):
        ids = _instance_ids(target)
        calls("ec2.StopInstances", aws("ec2", region).stop_instances, InstanceIds=ids)
        return f"stopped {', '.join(ids)} (EBS volumes kept; start again at any time)."
    if action == Action.SNAPSHOT_AND_DELETE_VOLUME:
        ec2 = aws("ec2", region)
        vid = str(target["volume_id"])
        snap = calls(
            "ec2.CreateSnapshot",
            ec2.create_snapshot,
            VolumeId=vid,
            Description=f"mlcost: kept before deleting {vid}",
            TagSpecifications=[
                {
                    "ResourceType": "snapshot",
                    "Tags": [{"Key": "mlcost:deleted-volume", "Value": vid}],
                }
            ],
        )
        sid = snap["SnapshotId"]
        calls.made.append("ec2.DescribeSnapshots (snapshot_completed waiter)")
        ec2.get_waiter("snapshot_completed").wait(
            SnapshotIds=[sid], WaiterConfig={"Delay": wait_delay, "MaxAttempts": wait_attempts}
        )
        # the wait may take minutes: a protect tag added meanwhile still keeps the volume
        if _protected(aws, calls, action, region, target):
            raise ProtectedDuringWait(
                f"snapshot {sid} of {vid} completed, but {vid} now carries the mlcost:protect "
                "tag (read from AWS just now), so the volume was kept."
            )
        calls("ec2.DeleteVolume", ec2.delete_volume, VolumeId=vid)
        return f"snapshot {sid} of {vid} completed, then volume {vid} deleted."
    if action == Action.DELETE_SNAPSHOT:
        sid = str(target["snapshot_id"])
        calls("ec2.DeleteSnapshot", aws("ec2", region).delete_snapshot, SnapshotId=sid)
        return f"deleted snapshot {sid}."
    sm = aws("sagemaker", region)
    if action == Action.DELETE_ENDPOINT:
        name = str(target["endpoint_name"])
        calls("sagemaker.DeleteEndpoint", sm.delete_endpoint, EndpointName=name)
        config = target.get("endpoint_config_name")
        kept = f" (endpoint config {config} kept, to recreate it)" if config else ""
        return f"deleted endpoint {name}{kept}."
    if action == Action.STOP_NOTEBOOK:
        name = str(target["notebook_instance_name"])
        calls(
            "sagemaker.StopNotebookInstance",
            sm.stop_notebook_instance,
            NotebookInstanceName=name,
        )
        return f"stopped notebook instance {name} (its storage is kept)."
    if action == Action.STOP_TRAINING_JOB:
        name = str(target["training_job_name"])
        calls("sagemaker.StopTrainingJob", sm.stop_training_job, TrainingJobName=name)
        return f"stopped training job {name}."
    raise ValueError(f"no Stop it for action {action}")
