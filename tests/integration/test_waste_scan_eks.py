"""EKS GPU node groups under moto: GPU nodes with no GPU pod found and priced, the rest not.

moto's create_nodegroup launches no EC2 instances, so each test launches the nodes itself with
the tags EKS puts on a managed node group's instances (eks:cluster-name, eks:nodegroup-name), and
writes the Container Insights node metrics the CloudWatch agent would.
"""

from __future__ import annotations

import datetime as dt
import logging
from decimal import Decimal
from typing import Any

import pytest
from moto import mock_aws

from bot.waste.pricing import load_price_table
from bot.waste.scan.context import LedgerView, ScanContext, ScanPolicy
from bot.waste.scan.eks import scan_gpu_node_groups
from bot.waste.scan.model import Action, Reason, ResourceKind
from bot.waste.scan.run import scan_account
from tests.support.aws_calls import CountingAws

REGION = "us-east-1"
TABLE = "price table (AWS EC2 On-Demand pricing us-east-1 Linux, 2025-06)"
ROLE = "arn:aws:iam::123456789012:role/eks"


def context(now: dt.datetime) -> ScanContext:
    return ScanContext(
        account="123456789012",
        now=now,
        policy=ScanPolicy(),
        ledger=LedgerView(models={"recsys": "ranking"}),
        prices=load_price_table(),
    )


def cluster(aws: CountingAws, name: str) -> None:
    aws("eks", REGION).create_cluster(
        name=name, roleArn=ROLE, resourcesVpcConfig={"subnetIds": ["subnet-1"]}
    )


def node_group(
    aws: CountingAws,
    cluster_name: str,
    name: str,
    itype: str,
    nodes: int,
    tags: dict[str, str] | None = None,
) -> list[str]:
    """Create the node group in EKS and launch its nodes in EC2, as EKS would."""
    aws("eks", REGION).create_nodegroup(
        clusterName=cluster_name,
        nodegroupName=name,
        nodeRole=ROLE,
        subnets=["subnet-1"],
        instanceTypes=[itype],
        scalingConfig={"minSize": 0, "maxSize": 4, "desiredSize": nodes},
        tags=tags or {},
    )
    if not nodes:
        return []
    out = aws("ec2", REGION).run_instances(
        ImageId="ami-12c6146b",
        InstanceType=itype,
        MinCount=nodes,
        MaxCount=nodes,
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [
                    {"Key": "eks:cluster-name", "Value": cluster_name},
                    {"Key": "eks:nodegroup-name", "Value": name},
                ],
            }
        ],
    )
    return sorted(i["InstanceId"] for i in out["Instances"])


def gpu_pods(
    aws: CountingAws, cluster_name: str, ids: list[str], reserved: float, when: dt.datetime
) -> None:
    """Write what Container Insights publishes per node: GPUs reserved (%) and in use."""
    aws("cloudwatch", REGION).put_metric_data(
        Namespace="ContainerInsights",
        MetricData=[
            {
                "MetricName": metric,
                "Dimensions": [
                    {"Name": "ClusterName", "Value": cluster_name},
                    {"Name": "InstanceId", "Value": iid},
                    {"Name": "NodeName", "Value": f"ip-10-0-0-{n}.ec2.internal"},
                ],
                "Timestamp": when,
                "Value": value,
            }
            for n, iid in enumerate(ids)
            for metric, value in (
                ("node_gpu_reserved_capacity", reserved),
                ("node_gpu_usage_total", reserved / 100),
            )
        ],
    )


@pytest.fixture
def world() -> Any:
    with mock_aws():
        aws = CountingAws()
        now = dt.datetime.now(dt.UTC)
        earlier = now - dt.timedelta(hours=6)
        cluster(aws, "ml")
        cluster(aws, "web")
        ids = {
            "idle": node_group(aws, "ml", "gpu-idle", "g5.xlarge", 2, {"ml:model": "recsys"}),
            "busy": node_group(aws, "ml", "gpu-busy", "g5.xlarge", 2),
            "protected": node_group(aws, "ml", "gpu-kept", "g5.xlarge", 1, {"mlcost:protect": ""}),
            "dark": node_group(aws, "ml", "gpu-dark", "p4d.24xlarge", 1),
            "empty": node_group(aws, "ml", "gpu-empty", "g5.xlarge", 0),
            "cpu": node_group(aws, "web", "cpu", "m5.large", 3),
        }
        gpu_pods(aws, "ml", ids["idle"], 0, earlier)
        gpu_pods(aws, "ml", ids["busy"][:1], 0, earlier)
        gpu_pods(aws, "ml", ids["busy"][1:], 100, earlier)  # one node's GPU is requested
        gpu_pods(aws, "ml", ids["protected"], 0, earlier)
        gpu_pods(aws, "web", ids["cpu"], 0, earlier)
        # gpu-dark: Container Insights is not installed there, no series at all
        yield aws, now, ids


def test_gpu_nodes_with_no_gpu_pod_are_found_and_priced(world: Any) -> None:
    aws, now, ids = world
    findings = scan_gpu_node_groups(aws, REGION, context(now))
    assert [f.resource_id for f in findings] == ["ml/gpu-idle"]
    group = findings[0]
    assert (group.kind, group.reason) == (ResourceKind.EKS_NODE_GROUP, Reason.NO_GPU_PODS)
    assert group.monthly_cost == Decimal("1468.76")  # 2 × 1.006 $/h × 730 h
    assert group.price_source == TABLE
    assert group.recommendation.action == Action.SCALE_NODE_GROUP_TO_ZERO
    assert group.recommendation.monthly_saving == Decimal("1468.76")
    assert group.resource.members == tuple(ids["idle"])
    assert dict(group.resource.target) == {"cluster_name": "ml", "nodegroup_name": "gpu-idle"}
    assert group.resource.size == "2 × g5.xlarge"
    assert group.resource.model == "recsys" and group.resource.team == "ranking"
    assert "no pod requested or used a GPU" in group.evidence
    assert "Karpenter" in group.recommendation.text


def test_nodes_without_container_insights_are_said_and_never_guessed(
    world: Any, caplog: pytest.LogCaptureFixture
) -> None:
    aws, now, ids = world
    ctx = context(now)
    with caplog.at_level(logging.WARNING, logger="bot.waste.scan.eks"):
        findings = scan_gpu_node_groups(aws, REGION, ctx)
    assert "ml/gpu-dark" not in [f.resource_id for f in findings]
    [message] = [r.getMessage() for r in caplog.records]
    assert message.startswith("scan: EKS node group ml/gpu-dark in us-east-1 not judged")
    assert "node_gpu_reserved_capacity" in message and ids["dark"][0] in message
    [note] = ctx.notes  # and a scan note, which `mlcost waste scan` prints
    assert note.startswith(
        f"EKS node group ml/gpu-dark in us-east-1: not judged, node {ids['dark'][0]}"
    )


def test_a_ledger_run_rate_prices_the_nodes(world: Any) -> None:
    aws, now, ids = world
    ctx = context(now)
    ledger = LedgerView(run_rates={ids["idle"][0].lower(): Decimal("900.00")})
    ctx = ScanContext(ctx.account, now, ctx.policy, ledger, ctx.prices)
    [group] = scan_gpu_node_groups(aws, REGION, ctx)
    assert group.monthly_cost == Decimal("1634.38")  # 900 from the ledger + 734.38 from the table
    assert group.price_source == f"ledger + {TABLE}"


def test_the_scan_reports_node_groups_once_not_their_nodes_again(world: Any) -> None:
    aws, now, _ = world
    report = scan_account(aws, [REGION], context(now))
    assert report.failures == ()
    assert [(n.kind, n.message.split(":")[0]) for n in report.notes] == [
        ("EKS GPU node groups", "EKS node group ml/gpu-dark in us-east-1")
    ]
    # the EC2 GPU scanner leaves node-group nodes alone: no untagged-fleet finding for them
    assert [f.resource_id for f in report.findings] == ["ml/gpu-idle"]
    assert aws.calls["eks:DescribeNodegroup"] == 6
    assert aws.calls["eks:ListClusters"] == 1 and aws.calls["eks:ListNodegroups"] == 2
    # one GetMetricData for the EKS nodes' series; none for EC2 (every GPU box is a node)
    assert aws.calls["cloudwatch:GetMetricData"] == 1


@mock_aws
def test_no_gpu_node_group_costs_no_ec2_or_cloudwatch_call() -> None:
    aws = CountingAws()
    cluster(aws, "web")
    node_group(aws, "web", "cpu", "m5.large", 2)
    aws.calls.clear()
    assert scan_gpu_node_groups(aws, REGION, context(dt.datetime.now(dt.UTC))) == []
    assert not [c for c in aws.calls if not c.startswith("eks:")]


@mock_aws
def test_a_launch_template_group_is_judged_by_its_nodes_types() -> None:
    """EKS returns no instanceTypes when a launch template carries the type (moto fills in t3)."""
    from botocore.stub import Stubber

    aws = CountingAws()
    ids = aws("ec2", REGION).run_instances(
        ImageId="ami-12c6146b",
        InstanceType="g5.2xlarge",
        MinCount=1,
        MaxCount=1,
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [
                    {"Key": "eks:cluster-name", "Value": "ml"},
                    {"Key": "eks:nodegroup-name", "Value": "gpu-lt"},
                ],
            }
        ],
    )["Instances"]
    now = dt.datetime.now(dt.UTC)
    gpu_pods(aws, "ml", [ids[0]["InstanceId"]], 0, now - dt.timedelta(hours=1))
    eks = aws("eks", REGION)
    with Stubber(eks) as stub:
        stub.add_response("list_clusters", {"clusters": ["ml"]})
        stub.add_response("list_nodegroups", {"nodegroups": ["gpu-lt"]}, {"clusterName": "ml"})
        stub.add_response(
            "describe_nodegroup",
            {
                "nodegroup": {
                    "nodegroupName": "gpu-lt",
                    "clusterName": "ml",
                    "scalingConfig": {"minSize": 1, "maxSize": 2, "desiredSize": 1},
                    "launchTemplate": {"id": "lt-0abc", "version": "1"},
                    "tags": {},
                }
            },
            {"clusterName": "ml", "nodegroupName": "gpu-lt"},
        )
        [group] = scan_gpu_node_groups(aws, REGION, context(now))
    assert (group.resource_id, group.resource.size) == ("ml/gpu-lt", "1 × g5.2xlarge")
    assert group.monthly_cost == Decimal("884.76")  # 1.212 $/h × 730 h
