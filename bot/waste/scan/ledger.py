"""Build the scan's LedgerView from the ledger and the registry."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend, MLModel, Review, ReviewItem, Team
from bot.waste.checks import RUN_RATE_DAYS, run_rate, spend_in
from bot.waste.scan.context import LedgerView


def ledger_view(*, session: Session, as_of: dt.date, currency: str) -> LedgerView:
    """Return each resource's run-rate over the 7 days to `as_of`, and who owns what."""
    week = (as_of - dt.timedelta(days=RUN_RATE_DAYS - 1), as_of + dt.timedelta(days=1))
    rates: dict[str, Decimal] = {}
    for rid, cost in session.execute(
        select(DailySpend.resource_id, func.sum(DailySpend.billed_cost))
        .where(*spend_in(week, currency), DailySpend.resource_id.is_not(None))
        .group_by(DailySpend.resource_id)
    ):
        rate = run_rate(Decimal(cost or 0))
        for key in ledger_keys(str(rid)):
            rates[key] = rates.get(key, Decimal(0)) + rate
    models = {
        name: team
        for name, team in session.execute(
            select(MLModel.name, Team.name).join(Team, Team.id == MLModel.team_id)
        )
    }
    killed = frozenset(
        session.scalars(
            select(ReviewItem.model_name)
            .join(Review, Review.id == ReviewItem.review_id)
            .where(ReviewItem.decision == "kill")
        )
    )
    spending = frozenset(
        m
        for m in session.scalars(
            select(DailySpend.model)
            .where(
                *spend_in(week, currency),
                DailySpend.stage.in_(("training", "serving")),
                DailySpend.model.is_not(None),
            )
            .distinct()
        )
        if m
    )
    has_spend = session.scalar(select(func.count()).where(*spend_in(week, currency))) or 0
    return LedgerView(
        run_rates=rates,
        models=models,
        killed=killed,
        spending_models=spending,
        has_spend=has_spend > 0,
        currency=currency,
    )


def ledger_keys(resource_id: str) -> list[str]:
    """Return the lookup keys of a ledger resource id: itself, and an ARN's `type/name`."""
    rid = resource_id.lower()
    keys = [rid]
    if rid.startswith("arn:"):
        resource = rid.split(":", 5)[-1]
        keys.append(resource)
        last = resource.rsplit("/", 1)[-1]
        if last.startswith(("i-", "vol-", "snap-")):
            keys.append(last)
    return keys
