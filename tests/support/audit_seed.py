"""An audit log written by the real write paths, re-dated to fixed days for the audit tests."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.budgets.admin import set_budget
from bot.budgets.silences import acknowledge_budget
from bot.db.schema import AuditLog, ResourceFindingRecord
from bot.registry.ownership import set_model_owners
from tests.support.sample_registry import load_registry

RESOURCE_KEY = "123456789012/us-east-1/ebs_volume/vol-0abc"
HOSTILE_REASON = "<!channel> & `tick` <https://x.example|click>"


def at(day: int, hour: int = 9) -> dt.datetime:
    """Return a November 2026 time, UTC."""
    return dt.datetime(2026, 11, day, hour, 0, tzinfo=dt.UTC)


def seed_audit(session: Session) -> None:
    """Write changes through the write paths; date them 1 to 20 Nov (in id order).

    The registry import (by "test", on 1 Nov) is its summary and one record per team, model,
    budget and the settings; then six changes follow, one a day.
    """
    load_registry(session)
    imported = len(session.scalars(select(AuditLog.id)).all())
    set_budget(session=session, user_id="U0AAA111", scope="model:recsys", amount=Decimal(15000))
    set_budget(
        session=session, user_id="U0PPP111", scope="team:platform", amount=Decimal("5000.50")
    )
    set_model_owners(
        session=session,
        user_id="U0AAA111",
        model_name="recsys",
        owners=["U0AAA111", "U0NEW0001"],
    )
    acknowledge_budget(
        session=session, user_id="U0AAA111", scope="model:recsys", period="2026-11", now=at(12)
    )
    session.add(
        ResourceFindingRecord(
            account="123456789012",
            region="us-east-1",
            kind="ebs_volume",
            resource_id="vol-0abc",
            first_seen=at(1),
            last_seen=at(15),
            monthly_cost=Decimal("80.00"),
            raised_monthly_cost=Decimal("80.00"),
            model="recsys",
            team="ranking",
            reason="unattached",
            action="delete",
        )
    )
    session.add(
        AuditLog(
            actor="U0AAA111",
            action="waste_resource_keep",
            target=RESOURCE_KEY,
            detail={
                "finding": 1,
                "before": {"decision": "none", "keep_until": None, "action_count": 0},
                "after": {"decision": "keep", "keep_until": "2026-11-22", "action_count": 0},
            },
        )
    )
    session.add(
        AuditLog(
            actor="U0AAA111",
            action="review.decide",
            target="review:2026-10:ranking:model:recsys",
            detail={"decision": "keep", "before": None, "reason": HOSTILE_REASON},
        )
    )
    session.flush()
    days = [1] * imported + [3, 5, 8, 12, 15, 20]
    rows = session.scalars(select(AuditLog).order_by(AuditLog.id)).all()
    assert len(rows) == len(days)
    for row, day in zip(rows, days, strict=True):
        row.at = at(day)
    session.flush()
