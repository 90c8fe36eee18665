"""The demo's Kubernetes model: speech-asr trains on an EKS cluster that OpenCost measures.

`allocation_answer` builds, deterministically (seeded), what OpenCost's `/allocation` API
answers for November 2026 with `step=1d&includeIdle=true`: speech-asr's labelled trainer,
its unlabelled evaluation jobs (claimed by the registry's `namespace:` rule), kube-system,
an unmounted volume and the cluster's idle capacity.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from bot.bootstrap import AppServices
from bot.cli.ingest_cmd import print_report
from bot.cli.report_cmd import render
from bot.ingest.ledger import ingest
from bot.ingest.sources.opencost import OpenCostSource
from bot.periods import month_period
from bot.spend.reports import spend_report

CLUSTER = "eks-ml-training"
MODEL = "speech-asr"
NAMESPACE = "asr-train"
START = dt.date(2026, 11, 1)
DAYS = 30
GPU_HOUR = Decimal("4.09658")  # p4d.24xlarge on demand, $32.7726/h for 8 A100s, per GPU
NODE_GPUS = 8  # a p4d.24xlarge node; the cluster scales to one node at weekends
_PLACES = Decimal("0.00001")  # OpenCost rounds every amount to 5 places


def _allocation(
    name: str,
    day: dt.date,
    *,
    namespace: str | None,
    costs: dict[str, Decimal],
    gpu_hours: Decimal = Decimal(0),
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One allocation of a daily set, in OpenCost's JSON shape."""
    start = dt.datetime.combine(day, dt.time(), dt.UTC)
    window = {
        "start": f"{start:%Y-%m-%dT%H:%M:%SZ}",
        "end": f"{start + dt.timedelta(days=1):%Y-%m-%dT%H:%M:%SZ}",
    }
    props: dict[str, Any] = {"cluster": CLUSTER}
    if namespace:
        props["namespace"] = namespace
    if labels:
        props["labels"] = labels
    amounts = {k: v.quantize(_PLACES) for k, v in costs.items()}
    fields = ("cpuCost", "gpuCost", "ramCost", "pvCost", "networkCost")
    allocation: dict[str, Any] = {"name": name, "properties": props, "window": window}
    allocation.update(start=window["start"], end=window["end"], minutes=1440.0)
    allocation["gpuHours"] = float(gpu_hours)
    for field in fields:
        allocation[field] = float(amounts.get(field, Decimal(0)))
        allocation[field.replace("Cost", "CostAdjustment")] = 0.0
    allocation["totalCost"] = float(sum(amounts.values(), Decimal(0)))
    return allocation


def allocation_answer() -> dict[str, Any]:
    """Return November's daily allocation sets for the EKS cluster (the same on every call)."""
    rng = random.Random(14)
    sets = []
    for offset in range(DAYS):
        day = START + dt.timedelta(days=offset)
        weekday = day.weekday() < 5
        week = day.isocalendar().week
        nodes = 2 if weekday else 1
        hours = rng.choice((18, 20, 21, 22) if weekday else (6, 8))
        train_gpu_hours = Decimal(nodes * NODE_GPUS * hours)
        eval_gpu_hours = Decimal(rng.choice((2, 3, 4)))
        idle_gpu_hours = nodes * NODE_GPUS * 24 - train_gpu_hours - eval_gpu_hours
        cpu = Decimal(rng.randint(300, 420)) / 100
        allocations = [
            _allocation(
                f"{NAMESPACE}/asr-trainer",
                day,
                namespace=NAMESPACE,
                labels={"ml_model": MODEL, "stage": "training", "ml_run": f"asr-w{week}"},
                gpu_hours=train_gpu_hours,
                costs={
                    "gpuCost": train_gpu_hours * GPU_HOUR,
                    "cpuCost": cpu * 8,
                    "ramCost": cpu * 3,
                    "pvCost": Decimal("6.4"),
                    "networkCost": Decimal(rng.randint(50, 150)) / 100,
                },
            ),
            _allocation(
                f"{NAMESPACE}/asr-eval",
                day,
                namespace=NAMESPACE,
                gpu_hours=eval_gpu_hours,
                costs={"gpuCost": eval_gpu_hours * GPU_HOUR, "cpuCost": cpu, "ramCost": cpu / 2},
            ),
            _allocation(
                "kube-system/coredns",
                day,
                namespace="kube-system",
                costs={"cpuCost": Decimal("1.2"), "ramCost": Decimal("0.45")},
            ),
            _allocation(
                "__unmounted__/__unmounted__",
                day,
                namespace="__unmounted__",
                costs={"pvCost": Decimal("3.2")},
            ),
            _allocation(
                "__idle__",
                day,
                namespace=None,
                costs={"gpuCost": idle_gpu_hours * GPU_HOUR, "cpuCost": Decimal("14.4")},
            ),
        ]
        sets.append({a["name"]: a for a in allocations})
    return {"code": 200, "status": "success", "data": sets}


def write_allocation_answer(folder: Path) -> Path:
    """Write the cluster's answer where `mlcost ingest opencost` can read it."""
    path = folder / "opencost" / f"allocation-{START:%Y-%m}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(allocation_answer(), indent=1) + "\n", encoding="utf-8")
    return path


def show_kubernetes(services: AppServices, folder: Path, section: Callable[[str], None]) -> None:
    """Ingest the EKS cluster's OpenCost allocations; show speech-asr and the idle line."""
    section(f"15. Kubernetes via OpenCost: {MODEL} trains on the EKS cluster {CLUSTER}")
    path = write_allocation_answer(folder)
    print(f"mlcost ingest opencost {path.relative_to(folder)}  (what /allocation answered)")
    with services.unit_of_work() as session:
        report = ingest(
            OpenCostSource(str(path)), session=session, attribution=services.settings.attribution
        )
    print_report(report)
    with services.unit_of_work() as session:
        spend = spend_report(
            session=session,
            period=month_period(f"{START:%Y-%m}"),
            by=["model", "stage"],
            where={"provider": "Kubernetes"},
        )
    print(render(spend, "table"), end="")
    show_idle_cluster_waste(services)


def show_idle_cluster_waste(services: AppServices) -> None:
    """Print the cluster's idle capacity as `mlcost report waste` lists it on the last day."""
    from bot.money import format_money
    from bot.slack.blocks.waste import unmarked
    from bot.waste.catalog import ledger_label
    from bot.waste.checks import RUN_RATE_DAYS, idle_cluster_capacity

    as_of = START + dt.timedelta(days=DAYS - 1)
    week = (as_of - dt.timedelta(days=RUN_RATE_DAYS - 1), as_of + dt.timedelta(days=1))
    currency = services.settings.currency
    with services.unit_of_work() as session:
        findings = list(idle_cluster_capacity(session, week, currency))
    print(f"\nmlcost report waste --as-of {as_of} lists the idle capacity as waste:")
    for finding in findings:
        print(
            f"  {format_money(finding.monthly_cost, currency)}/mo  "
            f"{ledger_label(finding.kind)}: {unmarked(finding.subject)}"
        )
        print(f"  {unmarked(finding.evidence)}")
        print(f"  fix: {unmarked(finding.fix)}")
