"""Ledger rows for tests that write spend straight into daily_spend."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from sqlalchemy.orm import Session

from bot.db.schema import DailySpend, IngestionRun


def ingestion_run(session: Session, **fields: Any) -> IngestionRun:
    """Add and flush a test ingestion run that ledger rows can belong to."""
    run = IngestionRun(source="test", **fields)
    session.add(run)
    session.flush()
    return run


def spend_record(
    run: IngestionRun,
    day: dt.date,
    billed: Decimal | int | str,
    *,
    effective: Decimal | int | str | None = None,
    **fields: Any,
) -> DailySpend:
    """Return one AWS ledger row of the run (effective cost defaults to the billed cost)."""
    values: dict[str, Any] = {"billing_account": "1", "service": "svc", "attribution": "tag"}
    values.update(fields)
    return DailySpend(
        run_id=run.id,
        day=day,
        billing_period=day.replace(day=1),
        provider="AWS",
        billed_cost=Decimal(billed),
        effective_cost=Decimal(billed if effective is None else effective),
        **values,
    )
