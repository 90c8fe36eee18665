"""EKS node groups that keep GPU nodes running while no pod asks for a GPU.

A managed node group is a candidate when its instance types are GPU families (p, g, trn, inf,
dl: the EC2 scanner's test) and its desired size is above zero. Its nodes are the running EC2
instances tagged `eks:cluster-name` and `eks:nodegroup-name`. Whether pods used their GPUs comes
from Container Insights with enhanced observability (namespace ContainerInsights, per node:
ClusterName, InstanceId, NodeName): `node_gpu_reserved_capacity` (the percentage of the node's
GPUs requested by pods, node_gpu_request / node_gpu_limit) and `node_gpu_usage_total` (GPUs
used by running pods). Their maximum over the window is zero on every node: no GPU pod ran,
and the group is reported with the nodes' cost as the saving of scaling it to zero.

A node with no such series leaves the group unjudged (a scan note and a log line, never
guessed). When OpenCost data is ingested, pod GPU requests will come from it instead (issue 14);
this scanner reads only CloudWatch.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bot.counts import counted
from bot.waste.scan.context import ScanContext
from bot.waste.scan.ec2 import EKS_NODEGROUP_TAG, GPU_TYPE
from bot.waste.scan.metrics import MetricQuery, fetch_window_values, list_series
from bot.waste.scan.model import (
    Action,
    FindingKind,
    Reason,
    Recommendation,
    Resource,
    ResourceFinding,
    ResourceKind,
    StopAction,
    is_protected,
)
from bot.waste.scan.pricing_rules import hourly_price
from bot.waste.scan.scanner import ResourceScanner

log = logging.getLogger(__name__)

NAMESPACE = "ContainerInsights"
GPU_POD_METRICS = ("node_gpu_reserved_capacity", "node_gpu_usage_total")
CLUSTER_TAG, NODEGROUP_TAG = "eks:cluster-name", EKS_NODEGROUP_TAG


@dataclass(frozen=True)
class NodeGroup:
    """A GPU node group as EKS describes it, with its running nodes (instance id -> type)."""

    cluster: str
    name: str
    instance_types: tuple[str, ...]
    desired: int
    tags: tuple[tuple[str, str], ...]
    nodes: dict[str, str]


def scan_gpu_node_groups(
    aws: Callable[..., Any], region: str, ctx: ScanContext
) -> list[ResourceFinding]:
    """Return GPU node groups whose nodes ran no GPU pod over the window."""
    eks = aws("eks", region)
    groups = _gpu_node_groups(eks)
    if not groups:
        return []
    _attach_nodes(aws("ec2", region), groups)
    cloudwatch = aws("cloudwatch", region)
    wanted = {iid for g in groups for iid in g.nodes}
    series: dict[str, list[MetricQuery]] = defaultdict(list)
    for metric in GPU_POD_METRICS:
        for ns, dims in list_series(cloudwatch, metric, NAMESPACE):
            iid = dict(dims).get("InstanceId")
            if iid in wanted:
                series[iid].append(MetricQuery(ns, metric, dims, "Maximum"))
    queries = [q for qs in series.values() for q in qs]
    values = fetch_window_values(cloudwatch, queries, ctx.now, ctx.policy.window_days)
    findings = []
    for group in groups:
        finding = _judge(group, series, values, region, ctx)
        if finding is not None:
            findings.append(finding)
    return findings


def _gpu_node_groups(eks: Any) -> list[NodeGroup]:
    groups = []
    for page in eks.get_paginator("list_clusters").paginate():
        for cluster in page.get("clusters", []):
            pages = eks.get_paginator("list_nodegroups").paginate(clusterName=cluster)
            for name in (n for p in pages for n in p.get("nodegroups", [])):
                described = eks.describe_nodegroup(clusterName=cluster, nodegroupName=name)
                group = described["nodegroup"]
                desired = int(group.get("scalingConfig", {}).get("desiredSize") or 0)
                types = tuple(group.get("instanceTypes") or ())
                tags = tuple(sorted((group.get("tags") or {}).items()))
                # a launch template may carry the type instead: the nodes then tell
                if desired <= 0 or (types and not any(GPU_TYPE.match(t) for t in types)):
                    continue
                if is_protected(tags):
                    continue
                groups.append(NodeGroup(cluster, name, types, desired, tags, {}))
    return groups


def _attach_nodes(ec2: Any, groups: list[NodeGroup]) -> None:
    by_name = {(g.cluster, g.name): g for g in groups}
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[
            {"Name": "instance-state-name", "Values": ["running"]},
            {"Name": f"tag:{CLUSTER_TAG}", "Values": sorted({g.cluster for g in groups})},
        ],
        PaginationConfig={"PageSize": 1000},
    )
    for page in pages:
        for reservation in page.get("Reservations", []):
            for inst in reservation.get("Instances", []):
                tags = {t["Key"]: t.get("Value", "") for t in inst.get("Tags") or []}
                group = by_name.get((tags.get(CLUSTER_TAG, ""), tags.get(NODEGROUP_TAG, "")))
                if group is not None:
                    group.nodes[inst["InstanceId"]] = inst.get("InstanceType", "")


def _judge(
    group: NodeGroup,
    series: dict[str, list[MetricQuery]],
    values: dict[MetricQuery, Decimal | None],
    region: str,
    ctx: ScanContext,
) -> ResourceFinding | None:
    label = f"EKS node group {group.cluster}/{group.name} in {region}"
    gpu_nodes = {iid: t for iid, t in group.nodes.items() if GPU_TYPE.match(t)}
    if not gpu_nodes:
        log.info("scan: %s has no running GPU node; nothing to judge", label)
        return None
    days = ctx.policy.window_days
    unread = sorted(
        iid
        for iid in gpu_nodes
        if not [v for q in series.get(iid, []) if (v := values.get(q)) is not None]
    )
    if unread:
        ctx.note(
            f"{label}: not judged, {'node' if len(unread) == 1 else 'nodes'} "
            f"{', '.join(unread)} {'has' if len(unread) == 1 else 'have'} no Container Insights "
            "GPU metrics "
            f"({' and '.join(GPU_POD_METRICS)}) over the last {days} days; enable Container "
            "Insights with enhanced observability"
        )
        log.warning(
            "scan: %s not judged: no Container Insights GPU metrics (%s, namespace %s) over the "
            "last %d days for node(s) %s; enable Container Insights with enhanced observability",
            label,
            " and ".join(GPU_POD_METRICS),
            NAMESPACE,
            days,
            ", ".join(unread),
        )
        return None
    peak = max(v for iid in gpu_nodes for q in series[iid] if (v := values.get(q)) is not None)
    if peak > 0:
        return None
    ids = sorted(gpu_nodes)
    prices = [hourly_price(ctx, [iid], "ec2", gpu_nodes[iid]) for iid in ids]
    monthly = sum((p.monthly for p in prices), Decimal(0))
    counts: dict[str, int] = defaultdict(int)
    for iid in ids:
        counts[gpu_nodes[iid]] += 1
    size = ", ".join(f"{n} × {t}" for t, n in sorted(counts.items()))
    resource = ctx.owned(
        Resource(
            kind=ResourceKind.EKS_NODE_GROUP,
            resource_id=f"{group.cluster}/{group.name}",
            account=ctx.account,
            region=region,
            resource_type=", ".join(sorted(counts)),
            size=size,
            tags=group.tags,
            target=(("cluster_name", group.cluster), ("nodegroup_name", group.name)),
            members=tuple(ids),
        )
    )
    return ResourceFinding(
        resource=resource,
        reason=Reason.NO_GPU_PODS,
        evidence=f"node group {group.cluster}/{group.name} runs {size} (desired size "
        f"{group.desired}) and no pod requested or used a GPU on any of its "
        f"{counted(len(ids), 'node')} "
        f"over the last {days} days",
        signal=f"Container Insights {' and '.join(GPU_POD_METRICS)} (maximum per node)",
        monthly_cost=monthly,
        price_source=" + ".join(sorted({p.source for p in prices})),
        recommendation=Recommendation(
            Action.SCALE_NODE_GROUP_TO_ZERO,
            "scale the node group to zero (minimum and desired size 0) and let the cluster "
            "autoscaler or Karpenter add GPU nodes when a pod requests one",
            monthly,
        ),
        currency=ctx.ledger.currency,
    )


def scale_to_zero_advice(target: Mapping[str, Any]) -> str:
    """Say how to scale the node group to zero by hand: mlcost never scales a cluster."""
    group, cluster = target.get("nodegroup_name", "?"), target.get("cluster_name", "?")
    return (
        f"mlcost never scales a cluster; scale node group {group} of cluster {cluster} to "
        "zero (minimum and desired size 0) and let the cluster autoscaler or Karpenter add "
        "GPU nodes when a pod asks for one."
    )


GPU_NODE_GROUPS = ResourceScanner(
    name="EKS GPU node groups",
    scan=scan_gpu_node_groups,
    kinds=(FindingKind(ResourceKind.EKS_NODE_GROUP, "EKS GPU node group"),),
    stops=(
        StopAction(
            Action.SCALE_NODE_GROUP_TO_ZERO,
            "records the approval only: mlcost never scales a cluster's node group "
            "(a recommendation)",
            scale_to_zero_advice,
        ),
    ),
    closes_missing=False,  # as before the catalog: its findings are not closed when gone
)
