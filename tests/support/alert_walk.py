"""Synthetic spend for budget and alert tests: a small organisation and a month day by day."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session, sessionmaker

from bot.db.engine import session_scope
from bot.db.schema import DailySpend, IngestionRun
from bot.ingest.rollup import refresh_rollup
from bot.registry.spec import parse_registry
from bot.registry.sync import import_registry

ALERT_REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
  - {name: platform, channel: C0PLATFORM, owners: [U0PPP111]}
models:
  - {name: alpha, team: ranking, owners: [U0AAA111], channel: C0ALPHA}
  - {name: beta, team: ranking, owners: [U0BBB111]}
  - {name: gamma, team: platform, owners: [U0PPP111]}
budgets:
  - {scope: "model:alpha", monthly: 3000, thresholds: [50, 80, 100], forecast: true}
  - {scope: "model:beta", monthly: 5000, thresholds: [80, 100]}
  - {scope: "team:platform", monthly: 1500, thresholds: [100], forecast: true}
  - {scope: "model:alpha/stage:training", monthly: 2000, thresholds: [100]}
  - {scope: "stage:storage", monthly: 1000, thresholds: [80]}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
"""

MONTH_START = dt.date(2026, 11, 1)
HISTORY_START = dt.date(2026, 10, 1)


def spend_row(
    day: dt.date,
    model: str | None,
    stage: str,
    team: str | None,
    cost: str,
    *,
    resource: str | None = None,
    gpu_hours: str = "0",
    service: str = "Amazon Elastic Compute Cloud",
) -> dict[str, Any]:
    """Return one ledger row."""
    amount = Decimal(cost)
    return {
        "day": day,
        "billing_period": day.replace(day=1),
        "provider": "AWS",
        "billing_account": "123456789012",
        "service": service,
        "resource_id": resource or f"res-{model or 'none'}-{stage}",
        "model": model,
        "stage": stage,
        "team": team,
        "attribution": "tag" if model else "unallocated",
        "billed_cost": amount,
        "effective_cost": amount,
        "gpu_hours": Decimal(gpu_hours),
        "charge_category": "Usage",
        "usage_quantity": Decimal(0),
        "estimated": False,
    }


def walk_day_rows(day: dt.date) -> list[dict[str, Any]]:
    """Return the scenario's spend for one day.

    alpha: $80 training + $30 storage every day. beta: $50 serving, plus a one-off $3,000
    training run on Nov 10. gamma: $80 serving on weekdays only. $30 a day nobody owns.
    """
    rows = [
        spend_row(day, "alpha", "training", "ranking", "80"),
        spend_row(day, "alpha", "storage", "ranking", "30"),
        spend_row(day, "beta", "serving", "ranking", "50"),
        spend_row(day, None, "other", None, "30", service="AWS Lambda"),
    ]
    if day == dt.date(2026, 11, 10):
        rows.append(spend_row(day, "beta", "training", "ranking", "3000", resource="i-beta-big"))
    if day.weekday() < 5:
        rows.append(spend_row(day, "gamma", "serving", "platform", "80"))
    return rows


def add_spend(session: Session, rows: list[dict[str, Any]]) -> None:
    """Insert ledger rows under one ingestion run, and sum their days into the rollup."""
    run = IngestionRun(source="test", location="synthetic", status="succeeded")
    session.add(run)
    session.flush()
    session.execute(insert(DailySpend), [{**row, "run_id": run.id} for row in rows])
    if rows:
        refresh_rollup(session, min(r["day"] for r in rows), max(r["day"] for r in rows))


def days(start: dt.date, end: dt.date) -> Iterator[dt.date]:
    """Yield each day in [start, end)."""
    day = start
    while day < end:
        yield day
        day += dt.timedelta(days=1)


def seed_walk(factory: sessionmaker[Session], registry: str = ALERT_REGISTRY) -> None:
    """Import the registry and October's spend (the history the forecast and baselines use)."""
    with session_scope(factory) as session:
        import_registry(parse_registry(registry), session=session, actor="test")
        add_spend(session, [r for d in days(HISTORY_START, MONTH_START) for r in walk_day_rows(d)])
