"""Idle Kubernetes capacity (OpenCost's explicit idle line) over a fifth of a cluster is waste."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from sqlalchemy.orm import Session

from bot.waste.checks import IDLE_CLUSTER_SHARE, run_rate
from bot.waste.findings import find_waste
from tests.support.alert_walk import add_spend, spend_row
from tests.support.sample_registry import load_registry

AS_OF = dt.date(2026, 11, 30)


def cluster_day(day: dt.date, cluster: str, workload: str, idle: str) -> list[dict[str, Any]]:
    """One day of a cluster: a workload line and its idle line, as the OpenCost source writes."""
    base = {"provider": "Kubernetes", "billing_account": cluster, "service": "Kubernetes"}
    return [
        {**spend_row(day, "recsys", "training", "ranking", workload), **base},
        {
            **spend_row(day, None, "other", None, idle, resource=f"{cluster}/__idle__"),
            **base,
            "attribution": "idle",
        },
    ]


def test_a_cluster_idle_for_a_quarter_of_its_cost_is_found_and_one_at_a_tenth_is_not(
    session: Session,
) -> None:
    load_registry(session)
    rows = []
    for back in range(10):  # ten days; the check reads the last seven
        day = AS_OF - dt.timedelta(days=back)
        rows += cluster_day(day, "eks-busy", "75", "25")  # 25 % idle
        rows += cluster_day(day, "eks-tight", "90", "10")  # 10 % idle: healthy headroom
    add_spend(session, rows)
    found = [f for f in find_waste(session=session, as_of=AS_OF) if f.kind == "idle_cluster"]
    assert [f.subject for f in found] == ["cluster `eks-busy`"]
    [finding] = found
    assert finding.monthly_cost == run_rate(Decimal(25) * 7) == Decimal("750.00")
    assert finding.evidence.startswith("25 % of the cluster's cost over the last 7 days")
    assert finding.resource_id == "eks-busy/__idle__" and finding.model is None
    assert Decimal("0.10") < IDLE_CLUSTER_SHARE <= Decimal("0.25")
