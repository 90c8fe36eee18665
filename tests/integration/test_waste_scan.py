"""The resource scan under moto: each kind found and priced, busy and protected never reported."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID as ACCOUNT
from moto.ec2.models import ec2_backends
from moto.s3.models import s3_backends
from moto.sagemaker.models import sagemaker_backends
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from bot.db.schema import Review, ReviewItem
from bot.waste.pricing import PriceRow, PriceTable, load_price_table
from bot.waste.scan.context import ScanContext, ScanPolicy
from bot.waste.scan.ledger import ledger_view
from bot.waste.scan.model import Action, Reason, ResourceKind
from bot.waste.scan.run import ScanReport, scan_account
from tests.conftest import rolled_back_session, without_real_credentials
from tests.support.aws_calls import CountingAws
from tests.support.economics_seed import REGISTRY, add_spend
from tests.support.sample_registry import load_registry

REGION, OTHER = "us-east-1", "us-west-2"
TABLE = "price table (AWS EC2 On-Demand pricing us-east-1 Linux, 2025-06)"
SM_TABLE = "price table (Amazon SageMaker AI pricing us-east-1 real-time inference, 2025-06)"
EBS_TABLE = "price table (Amazon EBS pricing us-east-1, 2025-06)"
PROTECT = {"Key": "mlcost:protect", "Value": "yes"}


def naive(when: dt.datetime) -> dt.datetime:
    return when.astimezone(dt.UTC).replace(tzinfo=None)


def launch(ec2: Any, itype: str, tags: dict[str, str], ami: str, extra: list[Any] = ()) -> str:  # type: ignore[assignment]
    spec = [{"Key": k, "Value": v} for k, v in tags.items()] + list(extra)
    kwargs: dict[str, Any] = {}
    if spec:
        kwargs["TagSpecifications"] = [{"ResourceType": "instance", "Tags": spec}]
    out = ec2.run_instances(ImageId=ami, InstanceType=itype, MinCount=1, MaxCount=1, **kwargs)
    return str(out["Instances"][0]["InstanceId"])


def put(
    cw: Any, namespace: str, metric: str, dims: dict[str, str], value: float, when: Any
) -> None:
    cw.put_metric_data(
        Namespace=namespace,
        MetricData=[
            {
                "MetricName": metric,
                "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
                "Timestamp": when,
                "Value": value,
            }
        ],
    )


def gpu(cw: Any, iid: str, pct: float, when: Any, gpus: int = 1) -> None:
    for index in range(gpus):
        dims = {"InstanceId": iid, "index": str(index), "name": "NVIDIA A10G"}
        put(cw, "CWAgent", "nvidia_smi_utilization_gpu", dims, pct, when)


def endpoint(sm: Any, name: str, tags: list[dict[str, str]] = ()) -> None:  # type: ignore[assignment]
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
    sm.create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-config", Tags=list(tags))


class World:
    """Everything the scenario created, by role."""

    ids: dict[str, str]

    def __init__(self) -> None:
        self.ids = {}


def build_world(session: Session, now: dt.datetime) -> World:
    world = World()
    ec2 = boto3.client("ec2", region_name=REGION)
    cw = boto3.client("cloudwatch", region_name=REGION)
    sm = boto3.client("sagemaker", region_name=REGION)
    s3 = boto3.client("s3", region_name=REGION)
    yesterday = now - dt.timedelta(days=1)
    ami, fleet_ami = "ami-12c6146b", "ami-1234abcd"
    ids = world.ids
    ids["busy"] = launch(ec2, "p4d.24xlarge", {"ml:model": "recsys"}, ami)
    gpu(cw, ids["busy"], 80, yesterday, gpus=8)
    ids["idle_gpu"] = launch(ec2, "g5.xlarge", {"ml:model": "recsys"}, ami)
    gpu(cw, ids["idle_gpu"], 1, yesterday)
    ids["idle_cpu"] = launch(ec2, "g4dn.xlarge", {"ml:model": "search"}, ami)
    put(cw, "AWS/EC2", "CPUUtilization", {"InstanceId": ids["idle_cpu"]}, 1.5, yesterday)
    put(cw, "AWS/EC2", "NetworkIn", {"InstanceId": ids["idle_cpu"]}, 1_000_000, yesterday)
    ids["busy_cpu"] = launch(ec2, "g4dn.xlarge", {"ml:model": "search"}, ami)
    put(cw, "AWS/EC2", "CPUUtilization", {"InstanceId": ids["busy_cpu"]}, 60, yesterday)
    ids["protected"] = launch(ec2, "p5.48xlarge", {"ml:model": "recsys"}, ami, [PROTECT])
    gpu(cw, ids["protected"], 0, yesterday)
    ids["underused"] = launch(ec2, "g5.12xlarge", {"ml:model": "recsys"}, ami)
    gpu(cw, ids["underused"], 10, yesterday, gpus=4)
    ids["ghost"] = launch(ec2, "g4dn.2xlarge", {"model": "ghost"}, ami)
    ids["killed"] = launch(ec2, "g5.2xlarge", {"ml:model": "churn"}, ami)
    gpu(cw, ids["killed"], 90, yesterday)
    ids["no_spend"] = launch(ec2, "g5.4xlarge", {"ml:model": "orphan"}, ami)
    gpu(cw, ids["no_spend"], 90, yesterday)
    ids["fleet1"] = launch(ec2, "g4dn.xlarge", {}, fleet_ami)
    ids["fleet2"] = launch(ec2, "g4dn.xlarge", {"Name": "worker"}, fleet_ami)
    ids["cpu_box"] = launch(ec2, "m5.large", {}, ami)
    ids["stopped"] = launch(ec2, "p3.2xlarge", {}, ami)
    ec2.stop_instances(InstanceIds=[ids["stopped"]])

    # the ledger: recsys and search train; search's idle box has line items of its own
    for back in range(1, 8):
        day = now.date() - dt.timedelta(days=back)
        add_spend(session, "recsys", "ranking", "training", day, "100", "i-elsewhere")
        add_spend(session, "search", "ranking", "training", day, "10", ids["idle_cpu"])
    review = Review(month="2026-11", team_name="risk", channel="C0RISK")
    review.items.append(
        ReviewItem(model_name="churn", decision="kill", decided_at=now - dt.timedelta(days=20))
    )
    session.add(review)
    session.flush()

    endpoint(sm, "busy-ep")
    put(
        cw,
        "AWS/SageMaker",
        "Invocations",
        {"EndpointName": "busy-ep", "VariantName": "main"},
        50,
        yesterday,
    )
    endpoint(sm, "idle-ep", [{"Key": "ml:model", "Value": "recsys"}])
    endpoint(sm, "kept-ep", [PROTECT])

    for name in ("old-nb", "new-nb"):
        sm.create_notebook_instance(
            NotebookInstanceName=name, InstanceType="ml.t3.medium", RoleArn="arn:aws:iam::1:role/x"
        )
    notebooks = sagemaker_backends[ACCOUNT][REGION].notebook_instances
    notebooks["old-nb"].last_modified_time = naive(now - dt.timedelta(days=30))

    az = f"{REGION}a"
    ids["loose"] = ec2.create_volume(Size=100, VolumeType="gp3", AvailabilityZone=az)["VolumeId"]
    ec2.create_volume(
        Size=500,
        VolumeType="gp3",
        AvailabilityZone=az,
        TagSpecifications=[{"ResourceType": "volume", "Tags": [PROTECT]}],
    )
    gone = ec2.create_volume(Size=50, VolumeType="gp2", AvailabilityZone=az)["VolumeId"]
    ids["old_snap"] = ec2.create_snapshot(VolumeId=gone)["SnapshotId"]
    ids["new_snap"] = ec2.create_snapshot(VolumeId=gone)["SnapshotId"]
    ec2.delete_volume(VolumeId=gone)
    kept_vol = ids["loose"]
    ids["kept_snap"] = ec2.create_snapshot(VolumeId=kept_vol)["SnapshotId"]
    snaps = ec2_backends[ACCOUNT][REGION].snapshots
    for sid in (ids["old_snap"], ids["kept_snap"]):
        snaps[sid].start_time = naive(now - dt.timedelta(days=200))

    west = boto3.client("ec2", region_name=OTHER)
    ids["west_vol"] = west.create_volume(
        Size=1000, VolumeType="io1", Iops=3000, AvailabilityZone=f"{OTHER}a"
    )["VolumeId"]

    for bucket in ("ckpt", "ckpt-lc"):
        s3.create_bucket(Bucket=bucket)
        for key in ("checkpoints/run-1/a.pt", "checkpoints/run-1/b.pt", "checkpoints/run-2/a.pt"):
            s3.put_object(Bucket=bucket, Key=key, Body=b"x" * 1024)
        keys = s3_backends[ACCOUNT]["global"].buckets[bucket].keys
        for key in ("checkpoints/run-1/a.pt", "checkpoints/run-1/b.pt"):
            keys.getlist(key)[-1].last_modified = naive(now - dt.timedelta(days=60))
    s3.put_bucket_lifecycle_configuration(
        Bucket="ckpt-lc",
        LifecycleConfiguration={
            "Rules": [
                {
                    "ID": "old-checkpoints",
                    "Status": "Enabled",
                    "Filter": {"Prefix": "checkpoints/"},
                    "Transitions": [{"Days": 30, "StorageClass": "GLACIER_IR"}],
                }
            ]
        },
    )
    return world


def price_table() -> PriceTable:
    """The bundled table, with S3 Standard at $100 per MiB-month so a few KiB cost cents."""
    table = load_price_table()
    rows = [*table.rows.values()]
    rows.append(
        PriceRow("s3", "STANDARD", 0, "", Decimal(100) * 1024, "GB-month", "test", "2026-12")
    )
    return PriceTable(rows)


def scan(session: Session, now: dt.datetime, aws: CountingAws) -> ScanReport:
    ledger = ledger_view(session=session, as_of=now.date() - dt.timedelta(days=1), currency="USD")
    ctx = ScanContext(
        account=ACCOUNT,
        now=now,
        policy=ScanPolicy(s3_patterns=("s3://ckpt/checkpoints/*", "s3://ckpt-lc/checkpoints/*")),
        ledger=ledger,
        prices=price_table(),
    )
    return scan_account(aws, [REGION, OTHER], ctx)


@pytest.fixture(scope="module")
def scanned(engine: Engine) -> tuple[World, ScanReport, CountingAws]:
    """One world and its scan for the module (the tests only read them; the data is rolled back)."""
    with pytest.MonkeyPatch.context() as monkeypatch, rolled_back_session(engine) as session:
        without_real_credentials(monkeypatch)  # the autouse fixture runs after module fixtures
        with mock_aws():
            load_registry(session, REGISTRY)
            now = dt.datetime.now(dt.UTC)
            world = build_world(session, now)
            aws = CountingAws()
            report = scan(session, now, aws)
    return world, report, aws


def by_id(report: ScanReport) -> dict[str, Any]:
    return {f.resource_id: f for f in report.findings}


def test_each_kind_is_found_and_priced(scanned: tuple[World, ScanReport, CountingAws]) -> None:
    world, report, _ = scanned
    ids, found = world.ids, by_id(report)
    assert report.failures == ()

    idle = found[ids["idle_gpu"]]
    assert (idle.kind, idle.reason) == (ResourceKind.GPU_INSTANCE, Reason.IDLE)
    assert idle.signal == "GPU utilisation (CloudWatch agent nvidia_smi_utilization_gpu)"
    assert idle.monthly_cost == Decimal("734.38")  # 1.006 $/h × 730 h
    assert idle.price_source == TABLE
    assert idle.resource.model == "recsys" and idle.resource.team == "ranking"
    assert dict(idle.resource.target) == {"instance_id": ids["idle_gpu"]}

    fallback = found[ids["idle_cpu"]]
    assert fallback.reason == Reason.IDLE
    assert fallback.signal == "CPU and network (no GPU metric)"
    assert (fallback.monthly_cost, fallback.price_source) == (Decimal("300.00"), "ledger")

    under = found[ids["underused"]]
    assert under.reason == Reason.UNDERUSED
    assert under.recommendation.action == Action.RIGHTSIZE
    assert "g5.xlarge" in under.recommendation.text
    assert under.recommendation.monthly_saving == Decimal("3406.18")  # (5.672 - 1.006) × 730

    assert found[ids["ghost"]].reason == Reason.OWNER_UNKNOWN
    assert found[ids["killed"]].reason == Reason.MODEL_KILLED
    assert found[ids["no_spend"]].reason == Reason.NO_MODEL_SPEND

    fleet = found["fleet/ami-1234abcd"]
    assert fleet.kind == ResourceKind.GPU_FLEET and fleet.reason == Reason.UNTAGGED_FLEET
    assert fleet.resource.members == tuple(sorted([ids["fleet1"], ids["fleet2"]]))
    assert fleet.monthly_cost == Decimal("767.96")  # 2 × 0.526 × 730
    assert ids["fleet1"] not in found and ids["fleet2"] not in found

    ep = found["idle-ep"]
    assert (ep.kind, ep.reason) == (ResourceKind.SAGEMAKER_ENDPOINT, Reason.NO_INVOCATIONS)
    assert (ep.monthly_cost, ep.price_source) == (Decimal("686.20"), SM_TABLE)
    assert dict(ep.resource.target)["endpoint_name"] == "idle-ep"
    assert ep.resource.model == "recsys"

    nb = found["old-nb"]
    assert nb.kind == ResourceKind.SAGEMAKER_NOTEBOOK and nb.monthly_cost == Decimal("36.50")

    vol = found[ids["loose"]]
    assert (vol.reason, vol.monthly_cost, vol.price_source) == (
        Reason.UNATTACHED,
        Decimal("8.00"),
        EBS_TABLE,
    )
    assert vol.recommendation.action == Action.SNAPSHOT_AND_DELETE_VOLUME
    assert vol.recommendation.monthly_saving == Decimal("3.00")  # minus a 100 GiB snapshot

    snap = found[ids["old_snap"]]
    assert snap.reason == Reason.ORPHANED_SNAPSHOT and snap.monthly_cost == Decimal("2.50")

    west = found[ids["west_vol"]]
    assert west.region == OTHER and west.monthly_cost == Decimal("125.00")

    stale = found["s3://ckpt/checkpoints/run-1/"]
    assert stale.kind == ResourceKind.S3_PREFIX
    assert stale.monthly_cost == Decimal("0.20")  # 2 KiB at $100 per MiB-month
    assert stale.recommendation.monthly_saving == Decimal("0.20")  # Glacier IR: $0.004/GB
    assert stale.price_source == "price table (test, 2026-12)"
    assert stale.recommendation.action == Action.LIFECYCLE_TO_COLDER_CLASS


def test_busy_new_protected_and_covered_are_never_reported(
    scanned: tuple[World, ScanReport, CountingAws],
) -> None:
    world, report, _ = scanned
    ids, found = world.ids, by_id(report)
    for role in ("busy", "busy_cpu", "protected", "cpu_box", "stopped", "new_snap", "kept_snap"):
        assert ids[role] not in found, role
    assert "busy-ep" not in found and "kept-ep" not in found and "new-nb" not in found
    assert not [f for f in found if f.startswith("s3://ckpt-lc/")]
    assert "s3://ckpt/checkpoints/run-2/" not in found
    assert all(f.resource.tag("mlcost:protect") is None for f in report.findings)
    assert not [f for f in found if f.startswith("vol-") and found[f].monthly_cost == Decimal(40)]


def test_findings_are_ranked_by_money_and_keyed_stably(
    scanned: tuple[World, ScanReport, CountingAws],
) -> None:
    _, report, _ = scanned
    costs = [f.monthly_cost for f in report.findings]
    assert costs == sorted(costs, reverse=True)
    keys = [f.key for f in report.findings]
    assert len(keys) == len(set(keys))
    assert all(k.account == ACCOUNT and k.region in (REGION, OTHER) for k in keys)


def test_cloudwatch_is_read_in_batches(scanned: tuple[World, ScanReport, CountingAws]) -> None:
    _, _, aws = scanned
    # us-east-1: one GetMetricData for every GPU series and every fallback CPU series, one for
    # the network of the instances whose CPU was idle, one for the endpoints; us-west-2 has no
    # GPU instances or endpoints, so no CloudWatch call at all
    assert aws.calls["cloudwatch:GetMetricData"] == 3
    assert aws.calls["cloudwatch:ListMetrics"] == 3  # CWAgent and DCGM series, Invocations
    assert aws.calls["ec2:DescribeInstances"] == 2  # one page per region
