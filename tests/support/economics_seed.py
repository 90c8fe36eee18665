"""Synthetic spend and value rows for unit-economics, review and gate tests."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy.orm import Session

from bot.db.schema import IngestionRun, ValueMetric
from tests.support.ledger import ingestion_run, spend_record

REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
  - {name: risk, channel: C0RISK, owners: [U0RRR111]}
models:
  - {name: recsys, team: ranking, owners: [U0AAA111, U0AAA112]}
  - {name: search, team: ranking, owners: [U0AAA113]}
  - {name: churn, team: risk, owners: [U0RRR111]}
  - {name: orphan, team: risk}
budgets:
  - {scope: "model:recsys", monthly: 2000}
  - {scope: "model:search", monthly: 500}
  - {scope: "model:churn", monthly: 1000}
admins: [U0ADMIN01]
"""


def add_spend(
    session: Session,
    model: str | None,
    team: str | None,
    stage: str,
    day: dt.date,
    cost: Decimal | str,
    resource_id: str | None = None,
    *,
    run: IngestionRun | None = None,
) -> None:
    """Add one ledger row, to `run` (the caller flushes) or to a throwaway run of its own."""
    own_run = run is None
    if run is None:
        run = ingestion_run(session, location="synthetic", status="ok")
    session.add(
        spend_record(
            run,
            day,
            cost,
            billing_account="acct",
            service="Amazon SageMaker",
            model=model,
            stage=stage,
            team=team,
            attribution="tag" if model else "unallocated",
            resource_id=resource_id,
        )
    )
    if own_run:
        session.flush()


def add_value(
    session: Session,
    model: str,
    day: dt.date,
    units: int | str,
    *,
    metric: str = "predictions",
    source: str = "csv",
    revenue: str | None = None,
) -> None:
    """Add one value row."""
    amount = Decimal(revenue) if revenue else None
    session.add(
        ValueMetric(
            model_name=model,
            day=day,
            metric=metric,
            units=Decimal(units),
            revenue=amount,
            source=source,
        )
    )
    session.flush()


def month_days(year: int, month: int) -> list[dt.date]:
    """Return every day of a month."""
    day = dt.date(year, month, 1)
    days = []
    while day.month == month:
        days.append(day)
        day += dt.timedelta(days=1)
    return days


def seed_review_month(session: Session) -> None:
    """October vs November 2026 with known answers.

    recsys: Oct 1000 (600 serving + 400 training), 1,000,000 predictions;
            Nov 1500 (600 serving + 900 training), 1,000,000 predictions -> cost incident.
    search: Oct 300 serving, 1,000,000 predictions; Nov 450 serving, 2,000,000 -> unit cost fell.
    churn:  Oct 310, Nov 300 training ($10 a day), no value at all -> flagged.
    """
    run = ingestion_run(session, location="synthetic", status="ok")  # one run for the seed
    for month, recsys_training, search_cost, search_units in (
        (10, Decimal(400), Decimal(300), 1_000_000),
        (11, Decimal(900), Decimal(450), 2_000_000),
    ):
        days = month_days(2026, month)
        n = len(days)
        for index, day in enumerate(days):
            last = index == n - 1
            # spread the month's cost over its days, putting the remainder on the last day
            for model, team, stage, cost in (
                ("recsys", "ranking", "serving", _share(Decimal(600), n, last)),
                ("recsys", "ranking", "training", _share(recsys_training, n, last)),
                ("search", "ranking", "serving", _share(search_cost, n, last)),
                ("churn", "risk", "training", Decimal(10)),
            ):
                add_spend(session, model, team, stage, day, cost, run=run)
        session.flush()
        add_value(session, "recsys", days[0], 1_000_000)
        add_value(session, "search", days[0], search_units)


def _share(total: Decimal, days: int, last: bool) -> Decimal:
    each = (total / days).quantize(Decimal("0.01"))
    return total - each * (days - 1) if last else each
