"""Ledger rows written straight into daily_spend, and checks over the ledger and its rollup."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend, IngestionRun, SpendRollup
from bot.ingest.rollup import rebuild_rollup


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


def roll_up(session: Session) -> None:
    """Flush rows added straight to daily_spend and sum the rollup again, as an ingestion does
    for the days it writes (budgets and some waste checks read the rollup)."""
    session.flush()
    rebuild_rollup(session)


def ledger_totals(session: Session) -> tuple[Decimal, Decimal, int]:
    """Return (billed, effective, rows) over the whole ledger."""
    billed, effective, rows = session.execute(
        select(func.sum(DailySpend.billed_cost), func.sum(DailySpend.effective_cost), func.count())
    ).one()
    return Decimal(billed or 0), Decimal(effective or 0), int(rows)


def assert_rollup_matches_ledger(session: Session) -> int:
    """Check spend_rollup row by row against the ledger grouped in Python; return its rows."""
    expected: dict[tuple[object, ...], list[Decimal]] = {}
    for row in session.execute(
        select(
            DailySpend.day,
            DailySpend.model,
            DailySpend.team,
            DailySpend.stage,
            DailySpend.currency,
            DailySpend.billed_cost,
            DailySpend.effective_cost,
            DailySpend.gpu_hours,
        )
    ):
        sums = expected.setdefault(tuple(row[:5]), [Decimal(0)] * 3)
        for i, value in enumerate(row[5:]):
            sums[i] += value
    rolled = {
        tuple(row[:5]): list(row[5:])
        for row in session.execute(
            select(
                SpendRollup.day,
                SpendRollup.model,
                SpendRollup.team,
                SpendRollup.stage,
                SpendRollup.currency,
                SpendRollup.billed_cost,
                SpendRollup.effective_cost,
                SpendRollup.gpu_hours,
            )
        )
    }
    assert session.scalar(select(func.count()).select_from(SpendRollup)) == len(rolled)
    assert rolled == expected
    return len(rolled)
