"""The waste checks, one function each: orphaned spend, stale checkpoints, idle endpoints,
killed models still spending, serving without autoscaling, idle Kubernetes capacity, idle GPUs
and Spot candidates.

Each finding carries a monthly run-rate (the last week's cost scaled to 30 days), the evidence,
and the fix.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import Select, func, or_, select

from bot.counts import counted
from bot.db.engine import among
from bot.db.reading import Reader
from bot.db.tables import daily_spend, review_items, reviews, spend_rollup, value_metrics
from bot.economics.value_metrics import daily_values, primary_metric
from bot.ingest.attribution import IDLE
from bot.periods import Period, trailing_days
from bot.waste.spot import SpotAdvisor

log = logging.getLogger(__name__)

RUN_RATE_DAYS = 7
SCALING_DAYS = 14  # two weeks show a weekly traffic pattern
QUIET_TRAFFIC = Decimal("0.6")  # quiet days carry at most 60 % of busy days' traffic...
LEVEL_COST = Decimal("0.85")  # ...while serving still costs at least 85 % of busy days
# A cluster whose idle capacity (OpenCost `__idle__`) is at least this share of its cost is
# over-provisioned: some headroom is healthy, a fifth of the bill is not.
IDLE_CLUSTER_SHARE = Decimal("0.20")


@dataclass(frozen=True)
class WasteFinding:
    """Money that burns silently: what, how much a month, the evidence and the fix."""

    kind: str
    subject: str
    monthly_cost: Decimal
    evidence: str
    fix: str
    model: str | None = None
    resource_id: str | None = None
    tag_value: str | None = None  # orphaned: the model tag value nobody registered


Week = tuple[dt.date, dt.date]  # [start, end)
# the week's cost of each ledger resource a finding is made of (see LedgerCheck.made_of)
MadeOf = Callable[[Reader, WasteFinding, Week, str], dict[str | None, Decimal] | None]


@dataclass(frozen=True)
class LedgerScope:
    """What a ledger check reads: the session (or a connection reading what it reads), the
    week [start, end), its last day, the currency, and the CloudWatch client and Spot advisor
    when there are any."""

    session: Reader
    week: Week
    as_of: dt.date
    currency: str
    cloudwatch: Any | None = None
    spot: SpotAdvisor | None = None
    spot_max_band: int = 2


@dataclass(frozen=True)
class LedgerCheck:
    """A check over the ledger: its kind, its label in words, and the check.

    `find(scope)` returns its findings (with their evidence and fix in words). `made_of`, when
    set, returns the week's cost of each ledger resource a finding is made of, so a resource
    finding of the account scan can stand for them (bot/waste/findings.py); None: the finding
    is a saving on how a model runs, not resources to remove.
    """

    kind: str
    label: str
    find: Callable[[LedgerScope], Iterable[WasteFinding]]
    made_of: MadeOf | None = None


def run_rate(week_cost: Decimal) -> Decimal:
    """Scale a week's cost to a 30-day month."""
    return (week_cost * 30 / RUN_RATE_DAYS).quantize(Decimal("0.01"))


def spend_in(window: tuple[dt.date, dt.date], currency: str) -> list[Any]:
    """Return the filters for ledger rows of a window [start, end) billed in a currency."""
    return [
        daily_spend.c.day >= window[0],
        daily_spend.c.day < window[1],
        daily_spend.c.currency == currency,
    ]


def orphaned(
    session: Reader, week: tuple[dt.date, dt.date], currency: str
) -> Iterable[WasteFinding]:
    """Spend tagged with a model name nobody registered (a deleted or forgotten model)."""
    rows = session.execute(
        select(
            daily_spend.c.model_tag_value,
            func.sum(daily_spend.c.billed_cost),
            func.count(func.distinct(daily_spend.c.resource_id)),
        )
        .where(
            *spend_in(week, currency),
            daily_spend.c.model.is_(None),
            daily_spend.c.model_tag_value.is_not(None),
        )
        .group_by(daily_spend.c.model_tag_value)
    )
    for tag_value, cost, resources in rows:
        yield WasteFinding(
            "orphaned",
            f"`{tag_value}`",
            run_rate(Decimal(cost or 0)),
            f"{counted(resources, 'resource')} tagged model={tag_value}, which is not a "
            "registered model",
            f"register `{tag_value}` with an owner, or delete its resources",
            tag_value=tag_value,
        )


def stale_checkpoints(
    session: Reader, week: tuple[dt.date, dt.date], as_of: dt.date, currency: str
) -> Iterable[WasteFinding]:
    """Storage of models that have not trained for 30 days: checkpoints nobody reads.

    Which models trained and which stored anything come from the rollup (the ledger summed by
    day, model, team, stage and currency: a group per model and stage that had rows, whatever
    they cost); only the storage of the models that did not train is read from the ledger.
    """
    month_ago = as_of - dt.timedelta(days=30)
    trained = set(
        session.scalars(
            select(spend_rollup.c.model)
            .where(
                spend_rollup.c.day > month_ago,
                spend_rollup.c.day <= as_of,
                spend_rollup.c.stage == "training",
                spend_rollup.c.model.is_not(None),
            )
            .distinct()
        )
    )
    storing = set(session.scalars(_rolled_up(week, currency, "storage")))
    stale = sorted(storing - trained)
    if not stale:
        return
    rows = session.execute(
        _stage_spend(week, currency, "storage", daily_spend.c.resource_id).where(
            among(session, daily_spend.c.model, stale)
        )
    )
    for model, resource, cost in rows:
        yield WasteFinding(
            "stale_checkpoints",
            f"{model} · {resource or 'storage'}",
            run_rate(Decimal(cost or 0)),
            f"`{model}` has not trained since {month_ago} or "
            "earlier, but its storage keeps billing",
            "expire old checkpoints with an S3 lifecycle rule, or move them to a colder tier",
            model=model,
            resource_id=resource,
        )


def idle_cluster_capacity(
    session: Reader, week: tuple[dt.date, dt.date], currency: str
) -> Iterable[WasteFinding]:
    """Kubernetes clusters whose idle capacity (nodes paid for, requested by no pod) is a large
    share of their cost: the ledger's explicit idle line (mlcost ingest opencost)."""
    is_idle = daily_spend.c.attribution == IDLE
    clusters = (
        select(daily_spend.c.billing_account)
        # idle rows have no model (bot.ingest.attribution): the model index finds them
        .where(*spend_in(week, currency), daily_spend.c.model.is_(None), is_idle)
        .distinct()
        .scalar_subquery()
    )
    rows = session.execute(
        select(
            daily_spend.c.billing_account,
            func.sum(daily_spend.c.billed_cost).filter(is_idle),
            func.sum(daily_spend.c.billed_cost),
        )
        .where(*spend_in(week, currency), daily_spend.c.billing_account.in_(clusters))
        .group_by(daily_spend.c.billing_account)
    )
    for cluster, idle, total in rows:
        idle, total = Decimal(idle or 0), Decimal(total or 0)
        if total <= 0 or idle < total * IDLE_CLUSTER_SHARE:
            continue
        share = (idle * 100 / total).quantize(Decimal(1))
        yield WasteFinding(
            "idle_cluster",
            f"cluster `{cluster}`",
            run_rate(idle),
            f"{share} % of the cluster's cost over the last {RUN_RATE_DAYS} days paid for "
            "capacity no pod requested (OpenCost idle)",
            "scale its node groups down, or let the cluster autoscaler (or Karpenter "
            "consolidation) remove empty nodes; pack GPU pods onto fewer nodes",
            resource_id=f"{cluster}/__idle__",
        )


def _stage_spend(week: tuple[dt.date, dt.date], currency: str, stage: str, *by: Any) -> Select[Any]:
    """Select the models' billed cost in one stage over the week, per model and `by` columns."""
    return (
        select(daily_spend.c.model, *by, func.sum(daily_spend.c.billed_cost))
        .where(
            *spend_in(week, currency),
            daily_spend.c.stage == stage,
            daily_spend.c.model.is_not(None),
        )
        .group_by(daily_spend.c.model, *by)
    )


def _rolled_up(week: tuple[dt.date, dt.date], currency: str, stage: str, *by: Any) -> Select[Any]:
    """Select each model's cost in one stage over the week, per `by` columns, from the rollup
    (a model with rows in the stage is there even when they cost nothing)."""
    return (
        select(spend_rollup.c.model, *by, func.sum(spend_rollup.c.billed_cost))
        .where(
            spend_rollup.c.day >= week[0],
            spend_rollup.c.day < week[1],
            spend_rollup.c.currency == currency,
            spend_rollup.c.stage == stage,
            spend_rollup.c.model.is_not(None),
        )
        .group_by(spend_rollup.c.model, *by)
    )


def idle_endpoints(
    session: Reader, week: tuple[dt.date, dt.date], currency: str
) -> Iterable[WasteFinding]:
    """Serving spend for a model that recorded no predictions all week (while others did)."""
    serving = session.execute(_rolled_up(week, currency, "serving")).all()
    if not serving:
        return
    with_value = set(
        session.scalars(
            select(value_metrics.c.model_name)
            .where(
                value_metrics.c.day >= week[0],
                value_metrics.c.day < week[1],
                value_metrics.c.units > 0,
            )
            .distinct()
        )
    )
    if not with_value:
        return  # nobody records value yet, so silence says nothing about idleness
    for model, cost in serving:
        if model in with_value:
            continue
        yield WasteFinding(
            "idle_endpoint",
            str(model),
            run_rate(Decimal(cost or 0)),
            f"`{model}` paid for serving all week and recorded no predictions",
            "scale the endpoint to zero or delete it; or record its value with /mlcost value",
            model=model,
        )


def killed_still_spending(
    session: Reader, week: tuple[dt.date, dt.date], currency: str
) -> Iterable[WasteFinding]:
    """Models decided Kill in a review that still cost money."""
    decided = session.execute(
        select(review_items.c.model_name, func.max(review_items.c.decided_at))
        .select_from(review_items.join(reviews, reviews.c.id == review_items.c.review_id))
        .where(review_items.c.decision == "kill")
        .group_by(review_items.c.model_name)
    ).all()
    for model, decided_at in decided:
        if decided_at is None:
            continue
        since = max(week[0], decided_at.date() + dt.timedelta(days=1))
        cost = session.scalar(
            select(func.sum(daily_spend.c.billed_cost)).where(
                daily_spend.c.model == model,
                daily_spend.c.day >= since,
                daily_spend.c.day < week[1],
                daily_spend.c.currency == currency,
            )
        )
        days = (week[1] - since).days
        if not cost or days <= 0:
            continue
        yield WasteFinding(
            "killed_still_spending",
            str(model),
            (Decimal(cost) * 30 / days).quantize(Decimal("0.01")),
            f"`{model}` was decided Kill on {decided_at.date()} and still costs money",
            "tear down its endpoints, jobs and storage",
            model=model,
        )


def idle_gpu_instances(
    session: Reader,
    week: tuple[dt.date, dt.date],
    cloudwatch: Any,
    as_of: dt.date,
    currency: str,
) -> Iterable[WasteFinding]:
    """GPU instances whose average CPU stayed under 5 % all week (CloudWatch)."""
    rows = session.execute(
        select(
            daily_spend.c.resource_id,
            daily_spend.c.model,
            daily_spend.c.instance_type,
            func.sum(daily_spend.c.billed_cost),
        )
        .where(
            *spend_in(week, currency),
            daily_spend.c.gpu_hours > 0,
            daily_spend.c.resource_id.like("i-%"),
        )
        .group_by(daily_spend.c.resource_id, daily_spend.c.model, daily_spend.c.instance_type)
    ).all()
    end = dt.datetime.combine(as_of + dt.timedelta(days=1), dt.time(), dt.UTC)
    for resource, model, instance_type, cost in rows:
        metric = {
            "Namespace": "AWS/EC2",
            "MetricName": "CPUUtilization",
            "Dimensions": [{"Name": "InstanceId", "Value": resource}],
        }
        response = cloudwatch.get_metric_data(
            MetricDataQueries=[
                {
                    "Id": "cpu",
                    "ReturnData": True,
                    "MetricStat": {
                        "Metric": metric,
                        "Period": 86400 * RUN_RATE_DAYS,
                        "Stat": "Average",
                    },
                }
            ],
            StartTime=end - dt.timedelta(days=RUN_RATE_DAYS),
            EndTime=end,
        )
        values = response["MetricDataResults"][0].get("Values") or []
        if not values or max(values) >= 5:
            continue
        yield WasteFinding(
            "idle_gpu",
            f"{resource} ({instance_type})",
            run_rate(Decimal(cost or 0)),
            f"average CPU {max(values):.1f} % over {RUN_RATE_DAYS} days on a GPU instance",
            "stop the instance, or move the job to spot/on-demand capacity when it runs",
            model=model,
            resource_id=resource,
        )


def spot_candidates(
    session: Reader,
    week: tuple[dt.date, dt.date],
    advisor: SpotAdvisor,
    max_band: int,
    currency: str,
) -> Iterable[WasteFinding]:
    """On-demand training where Spot is much cheaper and seldom interrupted.

    Training checkpoints and resumes, so it can run on Spot; serving is latency-bound and stays
    on-demand. The saving is what was paid (effective cost: Savings Plans and RIs already count)
    minus what the same hours cost on Spot (on-demand cost times the advisor's price ratio).
    """
    rows = session.execute(
        select(
            daily_spend.c.model,
            daily_spend.c.region,
            daily_spend.c.instance_type,
            func.sum(daily_spend.c.billed_cost),
            func.sum(daily_spend.c.effective_cost),
            func.count(func.distinct(daily_spend.c.resource_id)),
        )
        .where(
            *spend_in(week, currency),
            daily_spend.c.stage == "training",
            daily_spend.c.instance_type.is_not(None),
            daily_spend.c.charge_category == "Usage",
            or_(daily_spend.c.usage_type.is_(None), ~daily_spend.c.usage_type.ilike("%spot%")),
        )
        .group_by(daily_spend.c.model, daily_spend.c.region, daily_spend.c.instance_type)
    ).all()
    for model, region, instance_type, billed, effective, resources in rows:
        offer = advisor.offer(region, instance_type)
        if offer is None or offer.band > max_band:
            continue
        paid, on_demand = Decimal(effective or 0), Decimal(billed or 0)
        saving = paid - on_demand * offer.price_ratio
        if saving <= 0:
            continue
        discounted = (
            " (Savings Plans or RIs already discount part of it)" if paid < on_demand else ""
        )
        yield WasteFinding(
            "spot_candidate",
            f"`{model or 'unowned'}` training on {instance_type} in {region}",
            run_rate(saving),
            f"{counted(resources, 'on-demand instance')} trained last week{discounted}; Spot is "
            f"{offer.savings_pct} % below on-demand there and interrupted {offer.band_label} "
            "of the time (AWS Spot Instance Advisor)",
            "checkpoint often and train on Spot: SageMaker managed spot training, an EC2 Spot "
            "fleet or a Karpenter spot node pool",
            model=model,
        )


def serving_without_autoscaling(
    session: Reader, as_of: dt.date, currency: str
) -> Iterable[WasteFinding]:
    """Serving whose cost stays level while its traffic swings (no autoscaling).

    Over the last two weeks, the days are ranked by the model's traffic (its primary value
    metric). If the quietest third carried at most 60 % of the busiest third's traffic while
    serving cost at least 85 % as much, capacity is not following demand. The saving is what each
    day would have cost with capacity sized to its traffic against the busy days' level: a daily
    view, so it leaves out the larger swings within a day.
    """
    window = trailing_days(SCALING_DAYS, as_of)
    cost, traffic = _serving_cost_and_traffic(session, window, currency)
    for model, daily_cost in sorted(cost.items()):
        primary = primary_metric(traffic.get(model, {}))
        if primary is None:
            continue
        units = traffic[model][primary]
        days = sorted(d for d in daily_cost if d in units)
        if len(days) < SCALING_DAYS - 2:
            continue  # too few days with both cost and traffic to see a pattern
        ranked = sorted(days, key=lambda d: units[d])
        third = len(ranked) // 3
        quiet, busy = ranked[:third], ranked[-third:]
        peak = _mean([units[d] for d in busy])
        busy_cost = _mean([daily_cost[d] for d in busy])
        if peak <= 0 or busy_cost <= 0:
            continue
        traffic_ratio = _mean([units[d] for d in quiet]) / peak
        cost_ratio = _mean([daily_cost[d] for d in quiet]) / busy_cost
        if traffic_ratio > QUIET_TRAFFIC or cost_ratio < LEVEL_COST:
            continue
        saving = sum(
            (daily_cost[d] * max(Decimal(0), 1 - units[d] / peak) for d in days), Decimal(0)
        )
        yield WasteFinding(
            "fixed_serving",
            str(model),
            (saving * 30 / len(days)).quantize(Decimal("0.01")),
            f"over the last {len(days)} days, the quietest days of `{model}` carried "
            f"{traffic_ratio:.0%} of the {primary} of its busiest, yet serving cost "
            f"{cost_ratio:.0%} as much",
            "scale serving with traffic: SageMaker target tracking on InvocationsPerInstance, "
            "a Kubernetes HPA or KEDA, or fewer replicas off-peak",
            model=str(model),
        )


def _serving_cost_and_traffic(
    session: Reader, window: Period, currency: str
) -> tuple[dict[str, dict[dt.date, Decimal]], dict[str, dict[str, dict[dt.date, Decimal]]]]:
    """Return each model's daily serving cost, and its daily units per value metric."""
    rows = session.execute(
        _rolled_up((window.start, window.end), currency, "serving", spend_rollup.c.day)
    ).all()
    cost: dict[str, dict[dt.date, Decimal]] = {}
    for model, day, amount in rows:
        cost.setdefault(str(model), {})[day] = Decimal(amount or 0)
    traffic: dict[str, dict[str, dict[dt.date, Decimal]]] = {}
    for (model, day, metric), row in daily_values(
        session=session, period=window, models=list(cost)
    ).items():
        traffic.setdefault(model, {}).setdefault(metric, {})[day] = row.units
    return cost, traffic


def _mean(values: list[Decimal]) -> Decimal:
    return sum(values, Decimal(0)) / len(values)


def _one_resource(
    session: Reader, finding: WasteFinding, week: Week, currency: str
) -> dict[str | None, Decimal] | None:
    """The finding is one ledger resource (its resource id), when it names one."""
    return {finding.resource_id: Decimal(1)} if finding.resource_id else None


def _resources_where(
    session: Reader, week: Week, currency: str, where: list[Any]
) -> dict[str | None, Decimal]:
    """Return the week's cost of each ledger resource whose rows match `where`."""
    rows = session.execute(
        select(daily_spend.c.resource_id, func.sum(daily_spend.c.billed_cost))
        .where(*spend_in(week, currency), *where)
        .group_by(daily_spend.c.resource_id)
    )
    return {rid: Decimal(cost or 0) for rid, cost in rows}


def _orphaned_resources(
    session: Reader, finding: WasteFinding, week: Week, currency: str
) -> dict[str | None, Decimal] | None:
    if finding.tag_value is None:
        return None
    where = [daily_spend.c.model.is_(None), daily_spend.c.model_tag_value == finding.tag_value]
    return _resources_where(session, week, currency, where)


def _serving_resources(
    session: Reader, finding: WasteFinding, week: Week, currency: str
) -> dict[str | None, Decimal] | None:
    if not finding.model:
        return None
    where = [daily_spend.c.model == finding.model, daily_spend.c.stage == "serving"]
    return _resources_where(session, week, currency, where)


def _model_resources(
    session: Reader, finding: WasteFinding, week: Week, currency: str
) -> dict[str | None, Decimal] | None:
    if not finding.model:
        return None
    return _resources_where(session, week, currency, [daily_spend.c.model == finding.model])


def _idle_gpu(scope: LedgerScope) -> Iterable[WasteFinding]:
    if scope.cloudwatch is None:
        return ()
    return idle_gpu_instances(
        scope.session, scope.week, scope.cloudwatch, scope.as_of, scope.currency
    )


def _spot(scope: LedgerScope) -> Iterable[WasteFinding]:
    if scope.spot is None:
        return ()
    return spot_candidates(
        scope.session, scope.week, scope.spot, scope.spot_max_band, scope.currency
    )


ORPHANED = LedgerCheck(
    "orphaned",
    "Orphaned (tagged for an unregistered model)",
    lambda s: orphaned(s.session, s.week, s.currency),
    _orphaned_resources,
)
STALE_CHECKPOINTS = LedgerCheck(
    "stale_checkpoints",
    "Stale checkpoints",
    lambda s: stale_checkpoints(s.session, s.week, s.as_of, s.currency),
    _one_resource,
)
IDLE_ENDPOINT = LedgerCheck(
    "idle_endpoint",
    "Idle endpoint",
    lambda s: idle_endpoints(s.session, s.week, s.currency),
    _serving_resources,
)
KILLED_STILL_SPENDING = LedgerCheck(
    "killed_still_spending",
    "Killed, still spending",
    lambda s: killed_still_spending(s.session, s.week, s.currency),
    _model_resources,
)
FIXED_SERVING = LedgerCheck(
    "fixed_serving",
    "Serving does not scale with traffic",
    lambda s: serving_without_autoscaling(s.session, s.as_of, s.currency),
)
IDLE_CLUSTER = LedgerCheck(
    "idle_cluster",
    "Idle Kubernetes capacity",
    lambda s: idle_cluster_capacity(s.session, s.week, s.currency),
)
IDLE_GPU = LedgerCheck("idle_gpu", "Idle GPU instance", _idle_gpu, _one_resource)
SPOT_CANDIDATE = LedgerCheck("spot_candidate", "Spot candidate", _spot)
