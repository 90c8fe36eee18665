"""Build the scan's LedgerView from the ledger and the registry."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import func, select

from bot.db.reading import Reader
from bot.db.tables import daily_spend, models, review_items, reviews, teams
from bot.waste.checks import RUN_RATE_DAYS, run_rate, spend_in
from bot.waste.scan.context import LedgerView


def ledger_view(*, session: Reader, as_of: dt.date, currency: str) -> LedgerView:
    """Return each resource's run-rate over the 7 days to `as_of`, and who owns what."""
    week = (as_of - dt.timedelta(days=RUN_RATE_DAYS - 1), as_of + dt.timedelta(days=1))
    rates: dict[str, Decimal] = {}
    for rid, cost in session.execute(
        select(daily_spend.c.resource_id, func.sum(daily_spend.c.billed_cost))
        .where(*spend_in(week, currency), daily_spend.c.resource_id.is_not(None))
        .group_by(daily_spend.c.resource_id)
    ):
        rate = run_rate(Decimal(cost or 0))
        for key in ledger_keys(str(rid)):
            rates[key] = rates.get(key, Decimal(0)) + rate
    owned = {
        name: team
        for name, team in session.execute(
            select(models.c.name, teams.c.name).join_from(
                models, teams, teams.c.id == models.c.team_id
            )
        )
    }
    killed = frozenset(
        session.scalars(
            select(review_items.c.model_name)
            .join_from(review_items, reviews, reviews.c.id == review_items.c.review_id)
            .where(review_items.c.decision == "kill")
        )
    )
    spending = frozenset(
        m
        for m in session.scalars(
            select(daily_spend.c.model)
            .where(
                *spend_in(week, currency),
                daily_spend.c.stage.in_(("training", "serving")),
                daily_spend.c.model.is_not(None),
            )
            .distinct()
        )
        if m
    )
    has_spend = session.scalar(select(func.count()).where(*spend_in(week, currency))) or 0
    return LedgerView(
        run_rates=rates,
        models=owned,
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
