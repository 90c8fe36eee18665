"""Tax and a support plan's fee are shared costs, not spend a tag would fix: the unallocated
report and the weekly unallocated alert leave them out (the chargeback splits them)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy.orm import Session

from bot.config import Settings
from bot.notify.routing import Router
from bot.periods import month_period
from bot.poll.plan import plan_unallocated_post
from bot.spend.reports import spend_report
from bot.spend.unallocated import unallocated_report
from tests.support.alert_walk import add_spend, spend_row
from tests.support.outbox import rendered
from tests.support.sample_registry import load_registry

MONDAY = dt.date(2026, 11, 2)


def test_tax_and_support_fees_are_not_reported_or_alerted_as_unallocated(
    session: Session,
) -> None:
    load_registry(session)
    week = [MONDAY + dt.timedelta(days=i) for i in range(7)]
    rows = [spend_row(day, None, "other", None, "30") for day in week]  # $210 untagged usage
    rows += [
        {**spend_row(MONDAY, None, "other", None, "950", service="Tax"), "charge_category": "Tax"},
        {
            **spend_row(MONDAY, None, "other", None, "4800", service="AWS Support (Business)"),
            "charge_category": "Purchase",
        },
    ]
    add_spend(session, rows)

    posts, _ = plan_unallocated_post(
        session=session, settings=Settings(), as_of=dt.date(2026, 11, 9), router=Router(session)
    )
    assert [rendered(p)[0] for p in posts] == [
        ":mag: $210 of spend had no owner in the week of Nov 2–8"
    ]

    report = unallocated_report(session=session, period=month_period("2026-11"))
    assert {line.group["service"] for line in report.lines.lines} == {
        "Amazon Elastic Compute Cloud"
    }
    assert report.lines.total == Decimal(210)
    # the ledger still holds them: every report that sums the month counts them
    whole = spend_report(session=session, period=month_period("2026-11"), by=["model"])
    assert whole.total == whole.unallocated == Decimal(5960)
