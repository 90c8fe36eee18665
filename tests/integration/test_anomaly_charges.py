"""Anomalies judge usage: a month's tax, support fee or credit on the 1st is not an unusual day."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from sqlalchemy.orm import Session

from bot.anomalies.detect import find_anomalies
from tests.support.alert_walk import add_spend, spend_row
from tests.support.sample_registry import load_registry

FIRST = dt.date(2026, 11, 1)


def month_charge(
    cost: str, category: str, service: str, model: str | None = None
) -> dict[str, Any]:
    row = spend_row(FIRST, model, "other", "ranking" if model else None, cost, service=service)
    return {**row, "charge_category": category}


def test_monthly_tax_fees_and_credits_raise_no_anomaly_but_usage_still_does(
    session: Session,
) -> None:
    load_registry(session)
    rows = []
    for back in range(1, 29):  # four steady weeks
        day = FIRST - dt.timedelta(days=back)
        rows.append(spend_row(day, "recsys", "training", "ranking", "100"))
        rows.append(spend_row(day, None, "other", None, "10", service="Amazon VPC"))
    rows += [
        spend_row(FIRST, "recsys", "training", "ranking", "100"),
        spend_row(FIRST, None, "other", None, "10", service="Amazon VPC"),
        month_charge("4800", "Purchase", "AWS Support (Business)"),  # the support plan's fee
        month_charge("950", "Tax", "Tax"),
        month_charge("1200", "Purchase", "Amazon EC2", model="recsys"),  # an RI fee, tagged
        month_charge("-300", "Credit", "Amazon EC2", model="recsys"),
    ]
    add_spend(session, rows)
    assert find_anomalies(session=session, day=FIRST, min_excess=Decimal(50)) == []

    # the same amount as usage is unusual, for the model and for its stage
    add_spend(session, [spend_row(FIRST, "recsys", "training", "ranking", "1200")])
    scopes = {a.scope for a in find_anomalies(session=session, day=FIRST, min_excess=Decimal(50))}
    assert scopes == {"model:recsys", "stage:training"}
