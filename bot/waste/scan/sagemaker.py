"""SageMaker: endpoints nobody calls, notebooks left running, training jobs far past their usual.

- Endpoints (InService): no `Invocations` on any variant over the window (AWS/SageMaker, per
  EndpointName and VariantName; series are listed once with ListMetrics, read in batches).
  Serverless variants cost nothing idle and are skipped.
- Notebook instances (InService): SageMaker publishes no activity metric for notebook instances,
  so the signal is time: in service, unchanged since its last start or update (LastModifiedTime)
  for longer than the window.
- Studio apps (JupyterLab, CodeEditor, KernelGateway on a GPU instance type, InService): no user
  activity over the window. SageMaker's LastUserActivityTimestamp is also moved by its own health
  checks (it then equals LastHealthCheckTimestamp, as DescribeApp's reference says), so only a
  timestamp that differs from the health check's is taken as user activity; otherwise the
  signal is time in service since CreationTime, and the finding says which was used. Apps are
  listed per Studio domain (ListDomains, then ListApps per domain).
- Training jobs (InProgress): running for more than MLCOST training factor (3) times the median
  duration of at least 3 completed jobs whose names share the prefix (the name without its
  trailing digits, dates and separators).
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from bot.counts import counted
from bot.waste.scan.context import ScanContext
from bot.waste.scan.ec2 import GPU_TYPE
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
    tag_tuple,
)
from bot.waste.scan.pricing_rules import hourly_price
from bot.waste.scan.scanner import ResourceScanner

STUDIO_APP_TYPES = ("JupyterLab", "CodeEditor", "KernelGateway")
JOB_SUFFIX = re.compile(r"[-_.]*[0-9][0-9a-z]*([-_.][0-9][0-9a-z]*)*$", re.IGNORECASE)


def _tags(sm: Any, arn: str) -> tuple[tuple[str, str], ...]:
    """Return a SageMaker resource's tags, sorted (none when it has no ARN)."""
    return tag_tuple(sm.list_tags(ResourceArn=arn).get("Tags")) if arn else ()


def scan_endpoints(aws: Callable[..., Any], region: str, ctx: ScanContext) -> list[ResourceFinding]:
    """Return InService endpoints with no invocations on any variant over the window."""
    sm, cloudwatch = aws("sagemaker", region), aws("cloudwatch", region)
    endpoints = [
        e
        for page in sm.get_paginator("list_endpoints").paginate(StatusEquals="InService")
        for e in page.get("Endpoints", [])
    ]
    if not endpoints:
        return []
    names = {e["EndpointName"] for e in endpoints}
    series: dict[str, list[MetricQuery]] = defaultdict(list)
    for ns, dims in list_series(cloudwatch, "Invocations", "AWS/SageMaker"):
        name = dict(dims).get("EndpointName")
        if name is not None and name in names:
            series[name].append(MetricQuery(ns, "Invocations", dims, "Sum"))
    values = fetch_window_values(
        cloudwatch, [q for qs in series.values() for q in qs], ctx.now, ctx.policy.window_days
    )
    findings = []
    configs: dict[str, dict[str, Any]] = {}  # endpoints may share a config: described once
    for endpoint in endpoints:
        name = endpoint["EndpointName"]
        calls = sum((values.get(q) or Decimal(0) for q in series.get(name, [])), Decimal(0))
        if calls > 0:
            continue
        tags = _tags(sm, endpoint["EndpointArn"])
        if is_protected(tags):
            continue
        finding = _idle_endpoint(sm, endpoint, tags, region, ctx, configs)
        if finding is not None:
            findings.append(finding)
    return findings


def _idle_endpoint(
    sm: Any,
    endpoint: dict[str, Any],
    tags: tuple[tuple[str, str], ...],
    region: str,
    ctx: ScanContext,
    configs: dict[str, dict[str, Any]],
) -> ResourceFinding | None:
    name = endpoint["EndpointName"]
    described = sm.describe_endpoint(EndpointName=name)
    config_name = described["EndpointConfigName"]
    if config_name not in configs:
        configs[config_name] = sm.describe_endpoint_config(EndpointConfigName=config_name)
    config = configs[config_name]
    types = {v["VariantName"]: v.get("InstanceType") for v in config["ProductionVariants"]}
    variants = [
        (v["VariantName"], types.get(v["VariantName"]), int(v.get("CurrentInstanceCount") or 0))
        for v in described.get("ProductionVariants", [])
    ]
    priced = [(n, t, c) for n, t, c in variants if t and c > 0]
    if not priced:
        return None  # serverless or scaled to zero already: nothing burns
    ledger = ctx.ledger.run_rate(f"endpoint/{name}")
    parts = [hourly_price(ctx, [], "sagemaker", t, c) for _, t, c in priced]
    monthly = ledger if ledger is not None else sum((p.monthly for p in parts), Decimal(0))
    source = "ledger" if ledger is not None else " + ".join(sorted({p.source for p in parts}))
    size = ", ".join(f"{c} × {t}" for _, t, c in priced)
    resource = ctx.owned(
        Resource(
            kind=ResourceKind.SAGEMAKER_ENDPOINT,
            resource_id=name,
            account=ctx.account,
            region=region,
            resource_type=", ".join(sorted({t for _, t, _ in priced if t})),
            size=size,
            tags=tags,
            target=(
                ("endpoint_name", name),
                ("endpoint_config_name", described["EndpointConfigName"]),
            ),
        )
    )
    days = ctx.policy.window_days
    return ResourceFinding(
        resource=resource,
        reason=Reason.NO_INVOCATIONS,
        evidence=f"endpoint {name} ({size}) served no invocations on any of its "
        f"{counted(len(variants), 'variant')} over the last {days} days",
        signal="Invocations (AWS/SageMaker, every variant)",
        monthly_cost=monthly,
        price_source=source,
        recommendation=Recommendation(
            Action.DELETE_ENDPOINT,
            "delete the endpoint (its config and model stay, so it can be re-created), or "
            "scale it to zero",
            monthly,
        ),
        currency=ctx.ledger.currency,
    )


def scan_notebooks(aws: Callable[..., Any], region: str, ctx: ScanContext) -> list[ResourceFinding]:
    """Return notebook instances in service, unchanged since before the window."""
    sm = aws("sagemaker", region)
    days = ctx.policy.window_days
    cutoff = ctx.now - dt.timedelta(days=days)
    findings = []
    pages = sm.get_paginator("list_notebook_instances").paginate(StatusEquals="InService")
    for page in pages:
        for nb in page.get("NotebookInstances", []):
            since = nb.get("LastModifiedTime") or nb.get("CreationTime")
            if since is None or since > cutoff:
                continue
            tags = _tags(sm, nb["NotebookInstanceArn"])
            if is_protected(tags):
                continue
            name, itype = nb["NotebookInstanceName"], nb.get("InstanceType")
            price = hourly_price(ctx, [f"notebook-instance/{name}"], "sagemaker", itype)
            running = (ctx.now - since).days
            resource = ctx.owned(
                Resource(
                    kind=ResourceKind.SAGEMAKER_NOTEBOOK,
                    resource_id=name,
                    account=ctx.account,
                    region=region,
                    resource_type=itype,
                    tags=tags,
                    target=(("notebook_instance_name", name),),
                )
            )
            findings.append(
                ResourceFinding(
                    resource=resource,
                    reason=Reason.NO_ACTIVITY,
                    evidence=f"notebook {name} ({itype}) has been in service, unchanged, for "
                    f"{counted(running, 'day')} (since {since:%Y-%m-%d})",
                    signal="time in service since LastModifiedTime (SageMaker publishes no "
                    "notebook activity metric)",
                    monthly_cost=price.monthly,
                    price_source=price.source,
                    recommendation=Recommendation(
                        Action.STOP_NOTEBOOK,
                        "stop the notebook instance (its volume is kept); add an idle "
                        "auto-stop lifecycle configuration",
                        price.monthly,
                    ),
                    currency=ctx.ledger.currency,
                )
            )
    return findings


def scan_studio_apps(
    aws: Callable[..., Any], region: str, ctx: ScanContext
) -> list[ResourceFinding]:
    """Return Studio apps on GPU instances in service with no user activity over the window."""
    sm = aws("sagemaker", region)
    findings = []
    unknown: list[str] = []  # apps whose user activity SageMaker's health checks hide
    for page in sm.get_paginator("list_domains").paginate():
        for domain in page.get("Domains", []):
            apps = sm.get_paginator("list_apps").paginate(DomainIdEquals=domain["DomainId"])
            for app in (a for p in apps for a in p.get("Apps", [])):
                itype = (app.get("ResourceSpec") or {}).get("InstanceType") or ""
                if (
                    app.get("Status") != "InService"
                    or app.get("AppType") not in STUDIO_APP_TYPES
                    or not GPU_TYPE.match(itype.removeprefix("ml."))
                ):
                    continue
                finding = _idle_studio_app(sm, app, itype, region, ctx, unknown)
                if finding is not None:
                    findings.append(finding)
    if unknown:
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        shown = ", ".join(unknown[:5]) + more
        ctx.note(
            f"SageMaker Studio in {region}: user activity unknown for "
            f"{counted(len(unknown), 'app')} "
            f"({shown}): "
            "LastUserActivityTimestamp moves with SageMaker's health checks, so they were "
            "judged by time in service"
        )
    return findings


def _idle_studio_app(
    sm: Any,
    app: dict[str, Any],
    itype: str,
    region: str,
    ctx: ScanContext,
    unknown: list[str],
) -> ResourceFinding | None:
    # an app belongs to a space (JupyterLab, Code Editor) or to a user profile (Classic)
    in_space = bool(app.get("SpaceName"))
    holder = app["SpaceName"] if in_space else app.get("UserProfileName", "")
    holder_key = "SpaceName" if in_space else "UserProfileName"
    described = sm.describe_app(
        DomainId=app["DomainId"],
        AppType=app["AppType"],
        AppName=app["AppName"],
        **{holder_key: holder},
    )
    days = ctx.policy.window_days
    cutoff = ctx.now - dt.timedelta(days=days)
    activity = described.get("LastUserActivityTimestamp")
    health = described.get("LastHealthCheckTimestamp")
    created = described.get("CreationTime") or app.get("CreationTime")
    if activity is not None and activity != health:
        if activity > cutoff:
            return None
        evidence = f"no user activity since {activity:%Y-%m-%d}"
        signal = "LastUserActivityTimestamp (SageMaker DescribeApp)"
    else:
        if created is None or created > cutoff:
            unknown.append(f"{app['DomainId']}/{holder}/{app['AppName']}")
            return None
        evidence = f"in service for {(ctx.now - created).days} days (since {created:%Y-%m-%d})"
        signal = (
            "time in service since CreationTime (LastUserActivityTimestamp moves with "
            "SageMaker's health checks, so it cannot show whether anyone used the app)"
        )
    arn = described.get("AppArn") or app.get("AppArn", "")
    tags = _tags(sm, arn)
    if is_protected(tags):
        return None
    if signal.startswith("time in service"):
        unknown.append(f"{app['DomainId']}/{holder}/{app['AppName']}")
    where = f"{app['DomainId']}/{holder}"
    name = f"{where}/{app['AppType']}/{app['AppName']}"
    price = hourly_price(ctx, [arn] if arn else [], "sagemaker", itype)
    resource = ctx.owned(
        Resource(
            kind=ResourceKind.SAGEMAKER_STUDIO_APP,
            resource_id=name,
            account=ctx.account,
            region=region,
            resource_type=itype,
            tags=tags,
            target=(
                ("domain_id", app["DomainId"]),
                ("space_name" if in_space else "user_profile_name", holder),
                ("app_type", app["AppType"]),
                ("app_name", app["AppName"]),
            ),
        )
    )
    return ResourceFinding(
        resource=resource,
        reason=Reason.NO_ACTIVITY,
        evidence=f"Studio {app['AppType']} app {app['AppName']} of {where} ({itype}): {evidence}",
        signal=signal,
        monthly_cost=price.monthly,
        price_source=price.source,
        recommendation=Recommendation(
            Action.DELETE_STUDIO_APP,
            "delete the app (the space's storage is kept) and turn on Studio's idle shutdown",
            price.monthly,
        ),
        currency=ctx.ledger.currency,
    )


def job_prefix(name: str) -> str:
    """Return a training job's name without its trailing run number or timestamp."""
    return JOB_SUFFIX.sub("", name) or name


def usual_durations(completed: list[dict[str, Any]], min_jobs: int) -> dict[str, dt.timedelta]:
    """Return the median duration of completed jobs per name prefix (with at least min_jobs)."""
    by_prefix: dict[str, list[float]] = defaultdict(list)
    for job in completed:
        start, end = job.get("CreationTime"), job.get("TrainingEndTime")
        if start is None or end is None or end <= start:
            continue
        by_prefix[job_prefix(job["TrainingJobName"])].append((end - start).total_seconds())
    return {
        prefix: dt.timedelta(seconds=statistics.median(secs))
        for prefix, secs in by_prefix.items()
        if len(secs) >= min_jobs
    }


def scan_training_jobs(
    aws: Callable[..., Any], region: str, ctx: ScanContext
) -> list[ResourceFinding]:
    """Return InProgress training jobs running far past the median of their completed kin."""
    sm = aws("sagemaker", region)
    running = [
        j
        for page in sm.get_paginator("list_training_jobs").paginate(StatusEquals="InProgress")
        for j in page.get("TrainingJobSummaries", [])
    ]
    if not running:
        return []
    completed = [
        j
        for page in sm.get_paginator("list_training_jobs").paginate(StatusEquals="Completed")
        for j in page.get("TrainingJobSummaries", [])
    ]
    policy = ctx.policy
    usual = usual_durations(completed, policy.training_min_completed)
    findings = []
    for job in running:
        name = job["TrainingJobName"]
        median = usual.get(job_prefix(name))
        started = job.get("CreationTime")
        if median is None or started is None:
            continue
        elapsed = ctx.now - started
        if elapsed <= median * float(policy.training_overrun_factor):
            continue
        detail = sm.describe_training_job(TrainingJobName=name)
        tags = _tags(sm, detail["TrainingJobArn"])
        if is_protected(tags):
            continue
        rc = detail.get("ResourceConfig", {})
        itype, count = rc.get("InstanceType"), int(rc.get("InstanceCount") or 1)
        price = hourly_price(ctx, [f"training-job/{name}"], "sagemaker", itype, count)
        resource = ctx.owned(
            Resource(
                kind=ResourceKind.SAGEMAKER_TRAINING_JOB,
                resource_id=name,
                account=ctx.account,
                region=region,
                resource_type=itype,
                size=f"{count} × {itype}",
                tags=tags,
                target=(("training_job_name", name),),
            )
        )
        findings.append(
            ResourceFinding(
                resource=resource,
                reason=Reason.OVERRUNNING,
                evidence=f"training job {name} has run {_hours(elapsed)} h; completed "
                f"{job_prefix(name)} jobs take {_hours(median)} h (median)",
                signal=f"duration over {policy.training_overrun_factor}× the median of "
                f"completed jobs with the same name prefix",
                monthly_cost=price.monthly,
                price_source=price.source,
                recommendation=Recommendation(
                    Action.STOP_TRAINING_JOB,
                    "check its logs; stop the job if it is stuck (set MaxRuntimeInSeconds)",
                    price.monthly,
                ),
                currency=ctx.ledger.currency,
            )
        )
    return findings


def _hours(delta: dt.timedelta) -> str:
    return f"{delta.total_seconds() / 3600:.1f}"


def arn_ledger_ids(prefix: str) -> Callable[[str, Mapping[str, str], tuple[str, ...]], set[str]]:
    """Return the ledger ids of a SageMaker resource: `PREFIX/NAME`, lower-cased."""

    def ledger_ids(
        resource_id: str, target: Mapping[str, str], members: tuple[str, ...]
    ) -> set[str]:
        return {prefix + resource_id.lower()}

    return ledger_ids


def studio_app_advice(target: Mapping[str, Any]) -> str:
    """Say which Studio app to delete by hand: mlcost never deletes one."""
    return (
        f"mlcost never deletes Studio apps; delete Studio app {target.get('app_name', '?')} "
        f"({target.get('app_type', '?')}) in domain {target.get('domain_id', '?')} (its "
        "space's storage stays) and turn on Studio's idle shutdown."
    )


ENDPOINTS = ResourceScanner(
    name="SageMaker endpoints",
    scan=scan_endpoints,
    kinds=(
        FindingKind(
            ResourceKind.SAGEMAKER_ENDPOINT, "SageMaker endpoint", arn_ledger_ids("endpoint/")
        ),
    ),
    stops=(
        StopAction(Action.DELETE_ENDPOINT, "deletes the endpoint (its endpoint config is kept)"),
    ),
)
NOTEBOOKS = ResourceScanner(
    name="SageMaker notebook instances",
    scan=scan_notebooks,
    kinds=(
        FindingKind(
            ResourceKind.SAGEMAKER_NOTEBOOK,
            "SageMaker notebook",
            arn_ledger_ids("notebook-instance/"),
        ),
    ),
    stops=(StopAction(Action.STOP_NOTEBOOK, "stops the notebook instance"),),
)
TRAINING_JOBS = ResourceScanner(
    name="SageMaker training jobs",
    scan=scan_training_jobs,
    kinds=(
        FindingKind(
            ResourceKind.SAGEMAKER_TRAINING_JOB,
            "SageMaker training job",
            arn_ledger_ids("training-job/"),
        ),
    ),
    stops=(StopAction(Action.STOP_TRAINING_JOB, "stops the training job"),),
)
STUDIO_APPS = ResourceScanner(
    name="SageMaker Studio apps",
    scan=scan_studio_apps,
    kinds=(FindingKind(ResourceKind.SAGEMAKER_STUDIO_APP, "SageMaker Studio app"),),
    stops=(
        StopAction(
            Action.DELETE_STUDIO_APP,
            "records the approval only: mlcost never deletes Studio apps (a recommendation)",
            studio_app_advice,
        ),
    ),
    closes_missing=False,  # as before the catalog: its findings are not closed when gone
)
