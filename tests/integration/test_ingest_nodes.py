"""OpenCost allocations on EC2 nodes the bill also holds: the node's dollars counted once."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.budgets.evaluate import evaluate_budgets
from bot.db.schema import DailySpend, OverlappingSpend
from bot.ingest.ledger import IngestReport, ingest
from bot.ingest.sources.focus import FocusSource
from bot.ingest.sources.opencost import OpenCostSource
from bot.periods import month_period
from bot.spend.chargeback import chargeback_report, load_chargeback_policy
from bot.spend.reports import spend_report
from tests.conftest import DATA
from tests.support.cli import next_month, write_focus_rows
from tests.support.ledger import assert_rollup_matches_ledger, ledger_totals
from tests.support.opencost import allocation, allocation_answer
from tests.support.sample_registry import load_registry

ALLOCATIONS = DATA / "allocation-example-output.json"
NODE = "i-123458f89b9d35c11"  # the `opencost` allocation's providerID
DAY = dt.date(2023, 7, 12)  # the example's (accumulated) allocations are booked on this day
JULY = month_period("2023-07")
ACCOUNT = "111122223333"
# the example's three allocations, as OpenCost wrote them (totalCost)
ON_NODE = Decimal("0.10937")  # opencost, on the node
ELSEWHERE = Decimal("1.52743") + Decimal("0.14136")  # kube-system, prometheus: no node

NODES_REGISTRY = """\
teams:
  - {name: platform, channel: C0PLATFORM, owners: [U0PPP111]}
models:
  - {name: costmodel, team: platform, owners: [U0PPP111], match: {namespace: opencost}}
budgets:
  - {scope: "team:platform", monthly: 1000, thresholds: [100]}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
"""


def ec2_bill(
    path: Path,
    days: Sequence[dt.date],
    *,
    cost: str,
    resource: str = NODE,
    tags: dict[str, str] | None = None,
) -> Path:
    """Write a FOCUS export billing one EC2 instance `cost` a day (the sample's columns)."""
    return write_focus_rows(
        path,
        (
            {
                "ProviderName": "AWS",
                "BillingAccountId": ACCOUNT,
                "SubAccountId": ACCOUNT,
                "BilledCost": cost,
                "EffectiveCost": cost,
                "ListCost": cost,
                "BillingPeriodStart": f"{day.replace(day=1)} 00:00:00",
                "BillingPeriodEnd": f"{next_month(day)} 00:00:00",
                "ChargePeriodStart": f"{day} 00:00:00",
                "ChargePeriodEnd": f"{day + dt.timedelta(days=1)} 00:00:00",
                "ServiceName": "Amazon Elastic Compute Cloud",
                "ResourceId": resource,
                "Id": str(900000 + index),
                "Tags": json.dumps(tags or {}),
            }
            for index, day in enumerate(days)
        ),
    )


def counted(session: Session) -> dict[str, Decimal]:
    """What the ledger, budgets, chargeback and the spend report count for July 2023."""
    [chargeback] = chargeback_report(
        session=session, period=JULY, policy=load_chargeback_policy(session=session)
    )
    [totals] = spend_report(session=session, period=JULY, by=["model"]).totals
    models = spend_report(session=session, period=JULY, by=["model"])
    [budget] = evaluate_budgets(session=session, as_of=dt.date(2023, 7, 31))
    billed, _effective, _rows = ledger_totals(session)
    return {
        "ledger": billed,
        "chargeback": chargeback.exact_total,
        "report": totals.billed,
        "costmodel": sum(
            (line.cost for line in models.lines if line.group["model"] == "costmodel"), Decimal(0)
        ),
        "budget": budget.month_to_date,
    }


def set_aside(session: Session) -> Decimal:
    return Decimal(session.scalar(select(func.sum(OverlappingSpend.billed_cost))) or 0)


def ingest_both(session: Session, bill: Path, *, bill_first: bool) -> dict[str, IngestReport]:
    steps = [
        ("bill", lambda: ingest(FocusSource([str(bill)]), session=session)),
        ("opencost", lambda: ingest(OpenCostSource(str(ALLOCATIONS)), session=session)),
    ]
    return {name: run() for name, run in (steps if bill_first else steps[::-1])}


def test_allocations_on_a_billed_node_count_its_dollars_once_in_either_order(
    session: Session, tmp_path: Path
) -> None:
    load_registry(session, NODES_REGISTRY)
    bill = ec2_bill(tmp_path / "focus.csv", [DAY], cost="2.40")
    results = []
    for bill_first in (True, False):
        savepoint = session.begin_nested()
        reports = ingest_both(session, bill, bill_first=bill_first)
        results.append(counted(session))
        # the second ingestion finds the first's rows, and says so
        [opencost_line] = reports["opencost"].reconciliation_lines()
        [bill_line] = reports["bill"].reconciliation_lines()
        if bill_first:
            assert opencost_line.endswith(
                "; $0.11 of OpenCost allocations on 1 EC2 node also billed by focus, counted once"
            ), opencost_line
            assert "EC2" not in bill_line
        else:
            assert bill_line.endswith(
                "; $0.11 of 1 EC2 instance also in OpenCost allocations, counted once"
            ), bill_line
            assert "EC2" not in opencost_line
        assert set_aside(session) == 0  # the bill covers the whole allocation
        assert_rollup_matches_ledger(session)

        # re-ingesting either source changes nothing
        again = ingest(OpenCostSource(str(ALLOCATIONS)), session=session)
        assert again.reconciliation_lines()[0].endswith(
            "; $0.11 of OpenCost allocations on 1 EC2 node also billed by focus, counted once"
        )
        rebilled = ingest(FocusSource([str(bill)]), session=session)
        assert rebilled.reconciliation_lines()[0].endswith(
            "; $0.11 of 1 EC2 instance also in OpenCost allocations, counted once"
        )
        assert counted(session) == results[-1]
        assert_rollup_matches_ledger(session)
        savepoint.rollback()

    first, second = results
    assert first == second  # the order of ingestion does not matter
    # the bill is the book of record: the node's 2.40 once, plus the allocations on no node
    assert first["ledger"] == Decimal("2.40") + ELSEWHERE
    assert first["chargeback"] == first["report"] == first["ledger"]
    # the workload on the node keeps its own attribution, and its team's budget sees it once
    assert first["costmodel"] == first["budget"] == ON_NODE


def test_allocations_above_the_bill_are_set_aside(session: Session, tmp_path: Path) -> None:
    load_registry(session, NODES_REGISTRY)
    bill = ec2_bill(tmp_path / "focus.csv", [DAY], cost="0.05")
    reports = ingest_both(session, bill, bill_first=True)

    [line] = reports["opencost"].reconciliation_lines()
    assert line.endswith(
        "; $0.05 of OpenCost allocations on 1 EC2 node also billed by focus, counted once; "
        "$0.06 above the bill set aside"
    ), line
    totals = counted(session)
    assert totals["ledger"] == Decimal("0.05") + ELSEWHERE
    assert totals["costmodel"] == totals["budget"] == Decimal("0.05")
    assert set_aside(session) == ON_NODE - Decimal("0.05")
    assert_rollup_matches_ledger(session)


def test_a_kubernetes_provider_id_and_an_instance_arn_name_the_same_node(
    session: Session, tmp_path: Path
) -> None:
    load_registry(session, NODES_REGISTRY)
    answer = json.loads(ALLOCATIONS.read_text())
    answer["data"][0]["opencost"]["properties"]["providerID"] = (
        f"aws:///ap-southeast-2a/{NODE}"  # a node's spec.providerID
    )
    allocations = tmp_path / "allocation.json"
    allocations.write_text(json.dumps(answer))
    arn = f"arn:aws:ec2:ap-southeast-2:{ACCOUNT}:instance/{NODE}"
    ingest(
        FocusSource([str(ec2_bill(tmp_path / "f.csv", [DAY], cost="2.40", resource=arn))]),
        session=session,
    )
    ingest(OpenCostSource(str(allocations)), session=session)
    assert counted(session)["ledger"] == Decimal("2.40") + ELSEWHERE
    assert_rollup_matches_ledger(session)


def test_a_nodes_idle_capacity_is_the_idle_line_and_the_rest_stays_with_the_instance(
    session: Session, tmp_path: Path
) -> None:
    load_registry(session, NODES_REGISTRY)
    day = dt.date(2026, 11, 3)
    answer = allocation_answer(
        [
            allocation(
                "opencost/exporter", day, namespace="opencost", cpu="3.00", provider_id=NODE
            ),
            allocation("node-a/__idle__", day, cpu="5.00", provider_id=NODE),
            allocation("other/job", day, namespace="other", cpu="1.00", provider_id="i-0ffff"),
        ]
    )
    allocations = tmp_path / "allocation.json"
    allocations.write_text(answer)
    tagged = {"team": "platform"}
    ingest(OpenCostSource(str(allocations)), session=session)
    ingest(
        FocusSource([str(ec2_bill(tmp_path / "f.csv", [day], cost="10.00", tags=tagged))]),
        session=session,
    )
    rows = list(session.scalars(select(DailySpend).where(DailySpend.day == day)))
    by_attribution: dict[str, Decimal] = {}
    for row in rows:
        by_attribution[row.attribution] = by_attribution.get(row.attribution, Decimal(0)) + (
            row.billed_cost
        )
    total = sum(by_attribution.values(), Decimal(0))
    # the node billed 10.00 once; i-0ffff is in no bill, so its job counts as OpenCost says
    assert total == Decimal("10.00") + Decimal("1.00")
    assert by_attribution["idle"] == Decimal("5.00")  # the node's idle: the idle line
    report = spend_report(session=session, period=month_period("2026-11"), by=["model"])
    assert report.idle == Decimal("5.00")
    assert report.attributed + report.unallocated + report.idle == report.billed == total
    [costmodel] = [line for line in report.lines if line.group["model"] == "costmodel"]
    assert costmodel.cost == Decimal("3.00")
    assert_rollup_matches_ledger(session)


def test_idle_capacity_of_the_whole_cluster_is_named_when_its_nodes_are_billed(
    session: Session, tmp_path: Path
) -> None:
    load_registry(session, NODES_REGISTRY)
    day = dt.date(2026, 11, 3)
    answer = allocation_answer(
        [
            allocation(
                "opencost/exporter", day, namespace="opencost", cpu="3.00", provider_id=NODE
            ),
            allocation("__idle__", day, cpu="5.00"),  # no idleByNode: the cluster's idle
        ]
    )
    allocations = tmp_path / "allocation.json"
    allocations.write_text(answer)
    ingest(FocusSource([str(ec2_bill(tmp_path / "f.csv", [day], cost="10.00"))]), session=session)
    report = ingest(OpenCostSource(str(allocations)), session=session)
    [line] = report.reconciliation_lines()
    assert line.endswith(
        "; $3.00 of OpenCost allocations on 1 EC2 node also billed by focus, counted once; "
        "idle $5.00 of cluster eks-ml names no node, so the bill may count it too "
        "(ask OpenCost with idleByNode=true)"
    ), line
