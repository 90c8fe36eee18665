"""The same dollar from two sources: noticed on ingest, named with its amount, counted once."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.budgets.evaluate import evaluate_budgets
from bot.db.schema import DailySpend, IngestionRun, OverlappingSpend
from bot.ingest.ledger import ingest
from bot.ingest.sources.focus import FocusSource
from bot.ingest.sources.opencost import OpenCostSource
from bot.periods import month_period
from bot.spend.chargeback import chargeback_report, load_chargeback_policy
from bot.spend.reports import spend_report
from tests.conftest import DATA
from tests.support.cli import write_focus_rows
from tests.support.ledger import assert_rollup_matches_ledger, ledger_totals
from tests.support.opencost import allocation, allocation_answer
from tests.support.sample_registry import load_registry

CLOUD_COSTS = DATA / "cloudCost-example-output.json"
ACCOUNT = "123445954695"  # the AWS invoice entity of OpenCost's /cloudCost example
OCTOBER = month_period("2023-10")
BILL_DAYS = [dt.date(2023, 10, 28), dt.date(2023, 10, 29), dt.date(2023, 10, 30)]

OVERLAP_REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - {name: recsys, team: ranking, owners: [U0AAA111], match: {tags: {"ml:model": recsys}}}
budgets:
  - {scope: "stage:other", monthly: 1000000, thresholds: [100]}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
"""


def bill_file(
    path: Path,
    days: Sequence[dt.date],
    *,
    provider: str = "AWS",
    account: str = ACCOUNT,
    cost: str = "1000.00",
    resource: str = "i-0abc",
) -> Path:
    """Write a FOCUS export billing the account one charge a day (the sample's columns)."""
    return write_focus_rows(
        path,
        (
            {
                "ProviderName": provider,
                "BillingAccountId": account,
                "SubAccountId": account,
                "BilledCost": cost,
                "EffectiveCost": cost,
                "ListCost": cost,
                "BillingPeriodStart": f"{day.replace(day=1)} 00:00:00",
                "BillingPeriodEnd": "2023-11-01 00:00:00",
                "ChargePeriodStart": f"{day} 00:00:00",
                "ChargePeriodEnd": f"{day + dt.timedelta(days=1)} 00:00:00",
                "ServiceName": "Amazon Elastic Compute Cloud",
                "ResourceId": resource,
                "Id": str(800000 + index),
                "Tags": json.dumps({"ml:model": "recsys"}),
            }
            for index, day in enumerate(days)
        ),
    )


def cloud_cost_aws(days: Sequence[dt.date]) -> Decimal:
    """OpenCost's AWS invoiced cost on these days, read from the file as exact text."""
    answer = json.loads(CLOUD_COSTS.read_text(), parse_float=Decimal)
    return sum(
        (
            item["invoicedCost"]["cost"]
            for cost_set in answer["data"]["sets"]
            for item in cost_set["cloudCosts"].values()
            if item["properties"]["provider"] == "AWS"
            and dt.date.fromisoformat(item["window"]["start"][:10]) in days
        ),
        Decimal(0),
    )


def counted_totals(session: Session) -> dict[str, Decimal]:
    """What budgets, chargeback and the spend report count for October 2023."""
    [chargeback] = chargeback_report(
        session=session, period=OCTOBER, policy=load_chargeback_policy(session=session)
    )
    report = spend_report(session=session, period=OCTOBER, by=["provider"])
    [totals] = report.totals
    [budget] = evaluate_budgets(session=session, as_of=dt.date(2023, 10, 31))
    billed, _effective, _rows = ledger_totals(session)
    return {
        "ledger": billed,
        "chargeback": chargeback.exact_total,
        "report": totals.billed,
        "budget": budget.month_to_date,
    }


def test_a_bill_and_opencost_cloud_costs_of_one_account_day_count_each_dollar_once(
    session: Session, tmp_path: Path
) -> None:
    load_registry(session, OVERLAP_REGISTRY)
    opencost = ingest(OpenCostSource(str(CLOUD_COSTS)), session=session)
    everything = opencost.billed_total
    bill = ingest(FocusSource([str(bill_file(tmp_path / "focus.csv", BILL_DAYS))]), session=session)

    twice = cloud_cost_aws(BILL_DAYS)
    assert bill.reconciled and bill.billed_total == Decimal("3000.00")
    # the bill's own reconciliation holds, and it names the dollars OpenCost also reported
    [line] = bill.reconciliation_lines()
    assert line == (
        "reconciliation OK: billed $3,000.00 = attributed $3,000.00 + unallocated $0.00; "
        f"${twice:,.2f} also ingested from opencost (same AWS account {ACCOUNT} on "
        "2023-10-28..2023-10-30), counted once"
    )
    run = session.get(IngestionRun, bill.run_id)
    assert run is not None and run.overlaps is not None
    assert [(o["counted_by"], o["set_aside"], Decimal(o["amount"])) for o in run.overlaps] == [
        ("focus", "opencost", twice.quantize(Decimal("1E-10")))
    ]
    # the bill counts; OpenCost's restatement of those days is set aside, not summed
    aside = session.scalar(select(func.sum(OverlappingSpend.billed_cost)))
    assert aside == twice.quantize(Decimal("1E-10"))
    once = (everything - aside + bill.billed_total).quantize(Decimal("1E-10"))
    october = sum(
        (r.billed_cost for r in session.scalars(select(DailySpend)) if r.day.month == 10),
        Decimal(0),
    )
    totals = counted_totals(session)
    assert totals["ledger"] == once
    assert totals["chargeback"] == totals["report"] == october
    assert totals["budget"] == sum(
        (
            r.billed_cost
            for r in session.scalars(select(DailySpend))
            if r.day.month == 10 and r.stage == "other"
        ),
        Decimal(0),
    )
    assert_rollup_matches_ledger(session)


def test_the_same_dollars_are_counted_once_whichever_source_comes_first(
    session: Session, tmp_path: Path
) -> None:
    load_registry(session, OVERLAP_REGISTRY)
    # AWS's own FOCUS export says `AWS`; other tools write `Amazon Web Services`: one provider
    export = bill_file(tmp_path / "focus.csv", BILL_DAYS, provider="Amazon Web Services")
    bill = ingest(FocusSource([str(export)]), session=session)
    assert bill.overlaps == []
    opencost = ingest(OpenCostSource(str(CLOUD_COSTS)), session=session)

    twice = cloud_cost_aws(BILL_DAYS)
    [line] = opencost.reconciliation_lines()
    assert line.startswith(f"reconciliation OK: billed ${opencost.billed_total:,.2f} = ")
    assert line.endswith(
        f"; ${twice:,.2f} also billed by focus (same AWS account {ACCOUNT} on "
        "2023-10-28..2023-10-30), counted once"
    )
    billed, _effective, _rows = ledger_totals(session)
    assert billed == (opencost.billed_total - twice + bill.billed_total).quantize(Decimal("1E-10"))
    # the FOCUS rows kept their detail: OpenCost did not replace the bill's days
    assert session.scalar(select(func.count()).where(DailySpend.resource_id == "i-0abc")) == len(
        BILL_DAYS
    )
    assert_rollup_matches_ledger(session)

    # re-ingesting either changes nothing
    before = counted_totals(session)
    again = ingest(OpenCostSource(str(CLOUD_COSTS)), session=session)
    assert again.reconciliation_lines() == opencost.reconciliation_lines()
    ingest(FocusSource([str(export)]), session=session)
    assert counted_totals(session) == before
    assert_rollup_matches_ledger(session)


def test_set_aside_days_count_again_when_the_bill_no_longer_covers_them(
    session: Session, tmp_path: Path
) -> None:
    load_registry(session, OVERLAP_REGISTRY)
    ingest(OpenCostSource(str(CLOUD_COSTS)), session=session)
    ingest(FocusSource([str(bill_file(tmp_path / "a.csv", BILL_DAYS))]), session=session)
    # the month's export restated: it now bills only the 28th
    shorter = ingest(
        FocusSource([str(bill_file(tmp_path / "b.csv", BILL_DAYS[:1]))]), session=session
    )
    [overlap] = shorter.overlaps
    assert (overlap.first_day, overlap.last_day) == (BILL_DAYS[0], BILL_DAYS[0])
    aside = session.scalar(select(func.sum(OverlappingSpend.billed_cost)))
    assert aside == cloud_cost_aws(BILL_DAYS[:1]).quantize(Decimal("1E-10"))
    assert_rollup_matches_ledger(session)


def test_other_accounts_and_providers_do_not_overlap(session: Session, tmp_path: Path) -> None:
    load_registry(session, OVERLAP_REGISTRY)
    ingest(OpenCostSource(str(CLOUD_COSTS)), session=session)
    other = ingest(
        FocusSource([str(bill_file(tmp_path / "f.csv", BILL_DAYS, account="999999999999"))]),
        session=session,
    )
    assert other.overlaps == []
    assert "also" not in other.reconciliation_line()
    assert session.scalar(select(func.count()).select_from(OverlappingSpend)) == 0


def test_an_ingestion_names_only_the_dollars_it_holds_itself(
    session: Session, tmp_path: Path
) -> None:
    load_registry(session, OVERLAP_REGISTRY)
    ingest(OpenCostSource(str(CLOUD_COSTS)), session=session)
    ingest(FocusSource([str(bill_file(tmp_path / "a.csv", BILL_DAYS))]), session=session)
    # another account's export of the same days: none of its dollars are counted twice,
    # though the ledger holds an overlap of the same kind (focus) on those days
    other = ingest(
        FocusSource([str(bill_file(tmp_path / "b.csv", BILL_DAYS, account="999999999999"))]),
        session=session,
    )
    assert other.overlaps == [], other.reconciliation_line()
    assert "also" not in other.reconciliation_line()
    run = session.get(IngestionRun, other.run_id)
    assert run is not None and run.overlaps is None
    # an OpenCost answer of allocations on those days, beside the /cloudCost rows (the same
    # kind) that the bill set aside: none of the allocations are in the bill
    day = BILL_DAYS[0]
    allocations = tmp_path / "allocation.json"
    allocations.write_text(
        allocation_answer([allocation("ml/train", day, namespace="ml", cpu="3.00")])
    )
    pods = ingest(OpenCostSource(str(allocations)), session=session)
    assert pods.overlaps == [], pods.reconciliation_line()
    assert pods.reconciliation_line() == (
        "reconciliation OK: billed $3.00 = attributed $0.00 + unallocated $3.00"
    )
    # the bill itself still names what it counts once
    again = ingest(FocusSource([str(tmp_path / "a.csv")]), session=session)
    [overlap] = again.overlaps
    assert (overlap.set_aside, overlap.account) == ("opencost", ACCOUNT)
    assert overlap.amount == cloud_cost_aws(BILL_DAYS).quantize(Decimal("1E-10"))
    assert_rollup_matches_ledger(session)
