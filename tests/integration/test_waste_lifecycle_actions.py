"""What Stop it does for each kind of finding under moto; protected, disabled and failing cases."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from bot.waste.actions import Outcome, perform_stop
from tests.support.aws_calls import CountingAws

REGION = "us-east-1"
PROTECT = [{"Key": "mlcost:protect", "Value": "yes"}]


@pytest.fixture
def aws() -> Iterator[CountingAws]:
    with mock_aws():
        yield CountingAws()


def stop(aws: CountingAws, action: str, **target: str) -> Any:
    return perform_stop(aws, action=action, region=REGION, target=target, enabled=True)


def endpoint(aws: CountingAws, name: str, tags: list[dict[str, str]] = []) -> None:  # noqa: B006
    sm = aws("sagemaker", REGION)
    sm.create_model(
        ModelName=f"{name}-model",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/sm",
        PrimaryContainer={"Image": "123.dkr.ecr.us-east-1.amazonaws.com/x:1"},
    )
    sm.create_endpoint_config(
        EndpointConfigName=f"{name}-config",
        ProductionVariants=[
            {
                "VariantName": "main",
                "ModelName": f"{name}-model",
                "InitialInstanceCount": 1,
                "InstanceType": "ml.g4dn.2xlarge",
                "InitialVariantWeight": 1.0,
            }
        ],
    )
    sm.create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-config", Tags=tags)


def test_an_endpoint_is_deleted_and_its_config_kept(aws: CountingAws) -> None:
    endpoint(aws, "idle")
    endpoint(aws, "guarded", PROTECT)
    done = stop(aws, "delete_endpoint", endpoint_name="idle", endpoint_config_name="idle-config")
    assert done.outcome is Outcome.DONE
    assert (
        done.text
        == "done: deleted endpoint idle (endpoint config idle-config kept, to recreate it)."
    )
    sm = aws("sagemaker", REGION)
    assert [e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]] == ["guarded"]
    assert sm.describe_endpoint_config(EndpointConfigName="idle-config")
    refused = stop(aws, "delete_endpoint", endpoint_name="guarded")
    assert refused.outcome is Outcome.REFUSED and refused.summary == "refused: protected"
    assert aws.calls["sagemaker:DeleteEndpoint"] == 1


def test_a_notebook_is_stopped(aws: CountingAws) -> None:
    sm = aws("sagemaker", REGION)
    sm.create_notebook_instance(
        NotebookInstanceName="old-nb", InstanceType="ml.t3.medium", RoleArn="arn:aws:iam::1:role/x"
    )
    done = stop(aws, "stop_notebook", notebook_instance_name="old-nb")
    assert done.outcome is Outcome.DONE, done.text
    status = sm.describe_notebook_instance(NotebookInstanceName="old-nb")["NotebookInstanceStatus"]
    assert status in ("Stopping", "Stopped")


def test_a_volume_is_snapshotted_then_deleted(aws: CountingAws) -> None:
    ec2 = aws("ec2", REGION)
    vid = ec2.create_volume(Size=100, VolumeType="gp3", AvailabilityZone=f"{REGION}a")["VolumeId"]
    done = stop(aws, "snapshot_and_delete_volume", volume_id=vid)
    assert done.outcome is Outcome.DONE, done.text
    snaps = ec2.describe_snapshots(Filters=[{"Name": "volume-id", "Values": [vid]}])["Snapshots"]
    assert len(snaps) == 1 and snaps[0]["State"] == "completed"
    assert (
        done.text
        == f"done: snapshot {snaps[0]['SnapshotId']} of {vid} completed, then volume {vid} deleted."
    )
    assert ec2.describe_volumes(Filters=[{"Name": "volume-id", "Values": [vid]}])["Volumes"] == []
    assert list(done.calls) == [
        "ec2.DescribeVolumes",
        "ec2.CreateSnapshot",
        "ec2.DescribeSnapshots (snapshot_completed waiter)",
        "ec2.DescribeVolumes",
        "ec2.DeleteVolume",
    ]


class _TagDuringWait:
    """An EC2 client whose snapshot waiter sees someone tag the volume mlcost:protect."""

    def __init__(self, ec2: Any, volume_id: str) -> None:
        self._ec2, self._volume_id = ec2, volume_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ec2, name)

    def get_waiter(self, name: str) -> Any:
        waiter = self._ec2.get_waiter(name)
        ec2, volume_id = self._ec2, self._volume_id

        class Waiter:
            def wait(self, **params: Any) -> None:
                ec2.create_tags(Resources=[volume_id], Tags=PROTECT)
                waiter.wait(**params)

        return Waiter()


def test_a_protect_tag_added_during_the_snapshot_wait_keeps_the_volume(aws: CountingAws) -> None:
    ec2 = aws("ec2", REGION)
    vid = ec2.create_volume(Size=100, VolumeType="gp3", AvailabilityZone=f"{REGION}a")["VolumeId"]

    def tagging_aws(service: str, region: str) -> Any:
        client = aws(service, region)
        return _TagDuringWait(client, vid) if service == "ec2" else client

    result = perform_stop(
        tagging_aws,
        action="snapshot_and_delete_volume",
        region=REGION,
        target={"volume_id": vid},
        enabled=True,
    )
    assert result.outcome is Outcome.REFUSED, result.text
    assert result.summary == "refused: protected"
    assert "mlcost:protect" in result.text and "volume was kept" in result.text
    assert [v["VolumeId"] for v in ec2.describe_volumes(VolumeIds=[vid])["Volumes"]] == [vid]
    assert "ec2.DeleteVolume" not in result.calls
    assert aws.calls.get("ec2:DeleteVolume", 0) == 0


def test_an_orphaned_snapshot_is_deleted_unless_protected(aws: CountingAws) -> None:
    ec2 = aws("ec2", REGION)
    vid = ec2.create_volume(Size=10, AvailabilityZone=f"{REGION}a")["VolumeId"]
    loose = ec2.create_snapshot(VolumeId=vid)["SnapshotId"]
    kept = ec2.create_snapshot(
        VolumeId=vid, TagSpecifications=[{"ResourceType": "snapshot", "Tags": PROTECT}]
    )["SnapshotId"]
    assert stop(aws, "delete_snapshot", snapshot_id=loose).outcome is Outcome.DONE
    assert stop(aws, "delete_snapshot", snapshot_id=kept).outcome is Outcome.REFUSED
    left = {s["SnapshotId"] for s in ec2.describe_snapshots(OwnerIds=["self"])["Snapshots"]}
    assert loose not in left and kept in left


def test_s3_is_recommend_only_and_disabled_actions_call_nothing(aws: CountingAws) -> None:
    s3 = stop(aws, "lifecycle_to_colder_class", bucket="ml-artifacts", prefix="checkpoints/old/")
    assert s3.outcome is Outcome.RECOMMEND_ONLY
    assert "mlcost never writes S3 lifecycle rules" in s3.text
    off = perform_stop(
        aws, action="stop_instances", region=REGION, target={"instance_id": "i-1"}, enabled=False
    )
    assert off.summary == "disabled: approval recorded only"
    assert sum(aws.calls.values()) == 0


def test_an_aws_error_is_a_failed_result_with_its_code(aws: CountingAws) -> None:
    failed = stop(aws, "stop_instances", instance_id="i-0123456789abcdef0")
    assert failed.outcome is Outcome.FAILED
    assert failed.summary == "failed: InvalidInstanceID.NotFound"
    assert failed.text.startswith(
        "failed: AWS refused ec2.DescribeInstances with InvalidInstanceID.NotFound"
    )


def test_a_fleet_with_one_protected_member_is_not_touched(aws: CountingAws) -> None:
    ec2 = aws("ec2", REGION)
    ids = [
        ec2.run_instances(
            ImageId="ami-12c6146b",
            InstanceType="g5.xlarge",
            MinCount=1,
            MaxCount=1,
            **({"TagSpecifications": [{"ResourceType": "instance", "Tags": PROTECT}]} if n else {}),
        )["Instances"][0]["InstanceId"]
        for n in range(2)
    ]
    result = stop(aws, "stop_instances", instance_ids=",".join(ids))
    assert result.outcome is Outcome.REFUSED and ids[1] in result.text
    states = boto3.client("ec2", region_name=REGION).describe_instances(InstanceIds=ids)
    names = {i["State"]["Name"] for r in states["Reservations"] for i in r["Instances"]}
    assert names == {"running"}


@pytest.mark.parametrize(
    ("action", "target", "advice"),
    [
        (
            "scale_node_group_to_zero",
            {"cluster_name": "ml", "nodegroup_name": "gpu-a10g"},
            "scale node group gpu-a10g of cluster ml to zero",
        ),
        (
            "delete_studio_app",
            {"domain_id": "d-1", "app_name": "default", "app_type": "JupyterLab"},
            "delete Studio app default",
        ),
    ],
)
def test_node_groups_and_studio_apps_are_recommend_only(
    aws: CountingAws, action: str, target: dict[str, str], advice: str
) -> None:
    """Scaling a cluster's node group or deleting someone's Studio app is left to its owners."""
    result = stop(aws, action, **target)
    assert result.outcome is Outcome.RECOMMEND_ONLY
    assert result.summary == "recommend-only: approval recorded only"
    assert advice in result.text
    assert sum(aws.calls.values()) == 0
