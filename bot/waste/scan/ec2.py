"""EC2 GPU instances (p, g, trn, inf, dl families): idle, underused, unowned, or untagged fleets.

Rules, in order, one finding per instance:
- idle: the busiest GPU's average utilisation over the window is under MLCOST_SCAN_GPU_IDLE_PCT
  (CloudWatch agent `nvidia_smi_utilization_gpu`, namespace CWAgent, or the DCGM exporter's
  `DCGM_FI_DEV_GPU_UTIL`, any namespace, series with an InstanceId dimension); without a GPU
  metric, average CPU under MLCOST_SCAN_CPU_IDLE_PCT and network in+out under
  MLCOST_SCAN_NETWORK_IDLE_MB_PER_DAY. No data at all is never called idle.
- underused: GPU utilisation under MLCOST_SCAN_GPU_LOW_PCT and a cheaper type carries the load
  at 60 % (a smaller size of the family, or a smaller GPU).
- its model was decided Kill in a review; its model tag names no registered model; or (when the
  ledger has spend in the window) its model has no training or serving spend.
- untagged instances (no model tag) sharing a launch template or AMI: one finding for the fleet.
A busy instance tagged with a live, spending model is never reported. Nodes of EKS managed node
groups (tagged `eks:nodegroup-name`) are left to the EKS scanner: stopping one is no fix (its
Auto Scaling group replaces it), and the group is judged by what its pods request.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bot.counts import counted
from bot.waste.pricing import gpus_needed
from bot.waste.scan.context import ScanContext
from bot.waste.scan.metrics import MetricQuery, fetch_window_values, list_series
from bot.waste.scan.model import (
    Action,
    FindingKind,
    Price,
    Reason,
    Recommendation,
    Resource,
    ResourceFinding,
    ResourceKind,
    StopAction,
    is_protected,
    tag_tuple,
)
from bot.waste.scan.pricing_rules import hourly_price, row_monthly
from bot.waste.scan.scanner import ResourceScanner

GPU_TYPE = re.compile(r"^(p\d|g\d|trn\d|inf\d|dl\d)", re.IGNORECASE)
CW_AGENT_GPU = ("CWAgent", "nvidia_smi_utilization_gpu")
DCGM_GPU = "DCGM_FI_DEV_GPU_UTIL"
LAUNCH_TEMPLATE_TAG = "aws:ec2launchtemplate:id"
EKS_NODEGROUP_TAG = "eks:nodegroup-name"
MB = Decimal(1024 * 1024)


@dataclass(frozen=True)
class Usage:
    """What the metrics say about one instance."""

    signal: str
    idle: bool | None  # None: no data
    gpu_pct: Decimal | None = None
    cpu_pct: Decimal | None = None
    network_mb_per_day: Decimal | None = None

    def describe(self, days: int) -> str:
        if self.idle is None:
            return f"no metric data over the last {days} days"
        if self.gpu_pct is not None:
            return f"busiest GPU averaged {self.gpu_pct:.1f} % over {days} days"
        cpu = self.cpu_pct if self.cpu_pct is not None else Decimal(0)
        if self.network_mb_per_day is None:
            return f"CPU averaged {cpu:.1f} % over {days} days"
        net = self.network_mb_per_day
        return f"CPU averaged {cpu:.1f} % and network {net:.1f} MB/day over {days} days"


def scan_gpu_instances(
    aws: Callable[..., Any], region: str, ctx: ScanContext
) -> list[ResourceFinding]:
    """Return the findings of running GPU instances in one region."""
    ec2, cloudwatch = aws("ec2", region), aws("cloudwatch", region)
    instances = _running_gpu_instances(ec2)
    usage = _usage(cloudwatch, [i["InstanceId"] for i in instances], ctx)
    findings: list[ResourceFinding] = []
    untagged: dict[str, list[tuple[Resource, Price, Usage]]] = defaultdict(list)
    for inst in instances:
        tags = tag_tuple(inst.get("Tags"))
        if is_protected(tags):
            continue
        iid, itype = inst["InstanceId"], inst["InstanceType"]
        resource = ctx.owned(
            Resource(
                kind=ResourceKind.GPU_INSTANCE,
                resource_id=iid,
                account=ctx.account,
                region=region,
                resource_type=itype,
                size=_gpu_size(ctx, itype),
                tags=tags,
                target=(("instance_id", iid),),
            )
        )
        price = hourly_price(ctx, [iid], "ec2", itype)
        use = usage[iid]
        tag_value, _, _ = ctx.owner(tags)
        if tag_value is None:
            fleet = dict(tags).get(LAUNCH_TEMPLATE_TAG) or inst.get("ImageId") or iid
            untagged[fleet].append((resource, price, use))
            continue
        finding = _instance_finding(resource, price, use, tag_value, ctx)
        if finding is not None:
            findings.append(finding)
    for fleet, members in sorted(untagged.items()):
        if len(members) == 1:
            resource, price, use = members[0]
            finding = _instance_finding(resource, price, use, None, ctx)
            if finding is not None:
                findings.append(finding)
        else:
            findings.append(_fleet_finding(fleet, members, region, ctx))
    return findings


def _running_gpu_instances(ec2: Any) -> list[dict[str, Any]]:
    # the family is matched here, not with an `instance-type` wildcard filter: moto ignores
    # wildcards there, and pages of 1,000 running instances are cheap either way
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[{"Name": "instance-state-name", "Values": ["running"]}],
        PaginationConfig={"PageSize": 1000},
    )
    return [
        inst
        for page in pages
        for reservation in page.get("Reservations", [])
        for inst in reservation.get("Instances", [])
        if GPU_TYPE.match(inst.get("InstanceType", ""))
        and not any(t["Key"] == EKS_NODEGROUP_TAG for t in inst.get("Tags") or [])
    ]


def _gpu_size(ctx: ScanContext, itype: str) -> str | None:
    row = ctx.prices.get("ec2", itype)
    if row is None or not row.gpus:
        return None
    return f"{row.gpus} × {row.gpu_model}"


def _usage(cloudwatch: Any, instance_ids: list[str], ctx: ScanContext) -> dict[str, Usage]:
    """Read every instance's utilisation in a few batched calls."""
    wanted = set(instance_ids)
    gpu_series: dict[str, list[MetricQuery]] = defaultdict(list)
    signal_of: dict[str, str] = {}
    if wanted:
        sources = [
            (CW_AGENT_GPU[1], CW_AGENT_GPU[0], "CloudWatch agent nvidia_smi_utilization_gpu"),
            (DCGM_GPU, None, "DCGM exporter DCGM_FI_DEV_GPU_UTIL"),
        ]
        for metric, namespace, label in sources:
            for ns, dims in list_series(cloudwatch, metric, namespace):
                iid = dict(dims).get("InstanceId")
                if iid in wanted and signal_of.get(iid, label) == label:
                    gpu_series[iid].append(MetricQuery(ns, metric, dims, "Average"))
                    signal_of[iid] = label
    policy, days = ctx.policy, ctx.policy.window_days
    queries: list[MetricQuery] = [q for qs in gpu_series.values() for q in qs]
    fallback = [i for i in instance_ids if i not in gpu_series]
    queries += [_ec2(iid, "CPUUtilization", "Average") for iid in fallback]
    values = fetch_window_values(cloudwatch, queries, ctx.now, days)
    # network only where CPU was idle: a busy CPU already says busy, and each query costs
    quiet = [
        iid
        for iid in fallback
        if (cpu := values.get(_ec2(iid, "CPUUtilization", "Average"))) is not None
        and cpu < policy.cpu_idle_pct
    ]
    network = [_ec2(iid, m, "Sum") for iid in quiet for m in ("NetworkIn", "NetworkOut")]
    values.update(fetch_window_values(cloudwatch, network, ctx.now, days))
    usage: dict[str, Usage] = {}
    for iid in instance_ids:
        if iid in gpu_series:
            signal = f"GPU utilisation ({signal_of[iid]})"
            points = [v for q in gpu_series[iid] if (v := values.get(q)) is not None]
            if not points:
                usage[iid] = Usage(signal, None)
                continue
            busiest = max(points)
            usage[iid] = Usage(signal, busiest < policy.gpu_idle_pct, gpu_pct=busiest)
            continue
        cpu = values.get(_ec2(iid, "CPUUtilization", "Average"))
        signal = "CPU and network (no GPU metric)"
        if cpu is None:
            usage[iid] = Usage(signal, None)
            continue
        if cpu >= policy.cpu_idle_pct:
            usage[iid] = Usage(signal, False, cpu_pct=cpu)
            continue
        net_in = values.get(_ec2(iid, "NetworkIn", "Sum"))
        net_out = values.get(_ec2(iid, "NetworkOut", "Sum"))
        net = ((net_in or Decimal(0)) + (net_out or Decimal(0))) / MB / days
        idle = cpu < policy.cpu_idle_pct and net < policy.network_idle_mb_per_day
        usage[iid] = Usage(signal, idle, cpu_pct=cpu, network_mb_per_day=net)
    return usage


def _ec2(instance_id: str, metric: str, stat: str) -> MetricQuery:
    return MetricQuery("AWS/EC2", metric, (("InstanceId", instance_id),), stat)


def _instance_finding(
    resource: Resource, price: Price, use: Usage, tag_value: str | None, ctx: ScanContext
) -> ResourceFinding | None:
    days = ctx.policy.window_days
    stop = Recommendation(
        Action.STOP_INSTANCES,
        "stop the instance (terminate it once its data is saved)",
        price.monthly,
    )

    def finding(reason: Reason, evidence: str, rec: Recommendation = stop) -> ResourceFinding:
        return ResourceFinding(
            resource=resource,
            reason=reason,
            evidence=evidence,
            signal=use.signal,
            monthly_cost=price.monthly,
            price_source=price.source,
            recommendation=rec,
            currency=ctx.ledger.currency,
        )

    if use.idle:
        return finding(Reason.IDLE, f"{resource.resource_type} running idle: {use.describe(days)}")
    if use.gpu_pct is not None and use.gpu_pct < ctx.policy.gpu_low_pct:
        smaller = _smaller(resource, use.gpu_pct, price, ctx)
        if smaller is not None:
            return finding(
                Reason.UNDERUSED,
                f"{resource.resource_type} underused: {use.describe(days)}",
                smaller,
            )
    model = resource.model
    if model is not None and model in ctx.ledger.killed:
        return finding(
            Reason.MODEL_KILLED,
            f"tagged with model {model}, which was decided Kill in a review; {use.describe(days)}",
        )
    if tag_value is None:
        return finding(
            Reason.OWNER_UNKNOWN,
            f"no model tag ({', '.join(ctx.policy.model_tag_keys)}); {use.describe(days)}",
            Recommendation(
                Action.STOP_INSTANCES,
                "find its owner and tag it with its model, or stop it",
                price.monthly,
            ),
        )
    if model is None:
        return finding(
            Reason.OWNER_UNKNOWN,
            f"tagged model={tag_value}, which is not a registered model; {use.describe(days)}",
            Recommendation(
                Action.STOP_INSTANCES,
                f"register {tag_value} with an owner, or stop the instance",
                price.monthly,
            ),
        )
    if ctx.ledger.has_spend and model not in ctx.ledger.spending_models:
        return finding(
            Reason.NO_MODEL_SPEND,
            f"tagged with model {model}, which had no training or serving spend in the ledger over "
            f"the last {days} days; {use.describe(days)}",
        )
    return None


def _smaller(
    resource: Resource, gpu_pct: Decimal, price: Price, ctx: ScanContext
) -> Recommendation | None:
    current = ctx.prices.get("ec2", resource.resource_type)
    if current is None or not current.gpus:
        return None
    needed = gpus_needed(current.gpus, gpu_pct)
    smaller = ctx.prices.smaller_gpu("ec2", current.name, needed)
    if smaller is None:
        return None
    table_cost = row_monthly(current)
    ratio = row_monthly(smaller) / table_cost if table_cost else Decimal(1)
    saving = (price.monthly * (1 - ratio)).quantize(Decimal("0.01"))
    return Recommendation(
        Action.RIGHTSIZE,
        f"move to {smaller.name} ({smaller.gpus} × {smaller.gpu_model}): the load needs "
        f"{counted(needed, 'GPU')} at 60 % utilisation",
        saving,
    )


def _fleet_finding(
    fleet: str, members: list[tuple[Resource, Price, Usage]], region: str, ctx: ScanContext
) -> ResourceFinding:
    ids = tuple(sorted(r.resource_id for r, _, _ in members))
    types = sorted({r.resource_type or "?" for r, _, _ in members})
    total = sum((p.monthly for _, p, _ in members), Decimal(0))
    sources = sorted({p.source for _, p, _ in members})
    idle = [r.resource_id for r, _, u in members if u.idle]
    signals = sorted({u.signal for _, _, u in members})
    via = "launch template" if fleet.startswith("lt-") else "AMI"
    resource = Resource(
        kind=ResourceKind.GPU_FLEET,
        resource_id=f"fleet/{fleet}",
        account=ctx.account,
        region=region,
        resource_type=", ".join(types),
        size=f"{len(ids)} instances",
        target=(("instance_ids", ",".join(ids)), (via.replace(" ", "_"), fleet)),
        members=ids,
    )
    evidence = (
        f"{len(ids)} running GPU instances from {via} {fleet} carry no model tag "
        f"({', '.join(ctx.policy.model_tag_keys)}): {', '.join(ids)}"
    )
    if idle:
        evidence += f"; idle: {', '.join(idle)}"
    return ResourceFinding(
        resource=resource,
        reason=Reason.UNTAGGED_FLEET,
        evidence=evidence,
        signal="; ".join(signals),
        monthly_cost=total,
        price_source=" + ".join(sources),
        recommendation=Recommendation(
            Action.STOP_INSTANCES,
            "find the fleet's owner and tag its instances with their model, or stop them",
            total,
        ),
        currency=ctx.ledger.currency,
    )


def fleet_ledger_ids(
    resource_id: str, target: Mapping[str, str], members: tuple[str, ...]
) -> set[str]:
    """Return a fleet's instance ids (lower-cased): its target's and its members'."""
    ids = target.get("instance_ids", "")
    return {i.strip().lower() for i in ids.split(",") if i.strip()} | {m.lower() for m in members}


GPU_INSTANCES = ResourceScanner(
    name="EC2 GPU instances",
    scan=scan_gpu_instances,
    kinds=(
        FindingKind(ResourceKind.GPU_INSTANCE, "GPU instance"),
        FindingKind(ResourceKind.GPU_FLEET, "Untagged GPU fleet", fleet_ledger_ids),
    ),
    stops=(
        StopAction(Action.STOP_INSTANCES, "stops the instance(s)"),
        StopAction(Action.RIGHTSIZE, "stops the instance (resize it before starting it again)"),
    ),
)
