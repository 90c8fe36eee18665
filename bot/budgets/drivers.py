"""What drove a budget's period so far (its month, week, day or quarter): top stages, resources
and days."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import func, literal, or_, select
from sqlalchemy.orm import Session

from bot.budgets.evaluate import ZERO, BudgetStatus, scope_sums
from bot.db.engine import among
from bot.db.schema import DailySpend, SpendRollup
from bot.money import CostBasis
from bot.spend.reports import cost_column


@dataclass(frozen=True)
class Driver:
    label: str
    cost: Decimal


@dataclass
class Drivers:
    """The largest contributors to a budget's month so far."""

    stages: list[Driver] = field(default_factory=list)
    resources: list[Driver] = field(default_factory=list)
    days: list[Driver] = field(default_factory=list)


def _scope_key(status: BudgetStatus, shape: tuple[bool, bool, bool]) -> tuple[str, ...]:
    values = (status.model_name, status.team_name, status.stage)
    return tuple(str(v) for v, wanted in zip(values, shape, strict=True) if wanted)


def _top(totals: dict[Any, Decimal], limit: int) -> list[tuple[Any, Decimal]]:
    ranked = sorted(totals.items(), key=lambda item: item[1], reverse=True)
    return [(label, amount) for label, amount in ranked[:limit] if amount]


def top_drivers(
    *,
    session: Session,
    statuses: Iterable[BudgetStatus],
    basis: CostBasis = CostBasis.BILLED,
    limit: int = 3,
) -> dict[int, Drivers]:
    """Return the top stages, resources and days of each budget's period so far.

    Stages and days come from the rollup, a period at a time (all the monthly budgets, then the
    weekly ones, ...): one sum per budget and stage, one per budget and day. Resources come from
    one pass over the ledger for every period at once, summed by (model, team, stage, currency,
    resource) with one sum per period, reading only the rows of the scopes asked about; each
    budget's are ranked here, so no ledger row is joined to the budgets table.
    """
    wanted = list(statuses)
    drivers: dict[int, Drivers] = {s.budget_id: Drivers() for s in wanted}
    if not wanted:
        return drivers
    _add_stage_and_day_drivers(session, wanted, drivers, basis=basis, limit=limit)
    _add_resource_drivers(session, wanted, drivers, basis=basis, limit=limit)
    return drivers


def _add_stage_and_day_drivers(
    session: Session,
    wanted: list[BudgetStatus],
    drivers: dict[int, Drivers],
    *,
    basis: CostBasis,
    limit: int,
) -> None:
    """Add each budget's top stages and days of its period so far, from the rollup.

    Two statements for every period at once: per budget and stage, one sum per period; per
    budget, one sum per day from the earliest period's first day. Each budget keeps its own.
    """
    as_of = wanted[0].as_of
    periods = sorted({s.month for s in wanted}, key=lambda p: p.start)
    column = {p: f"p{i}" for i, p in enumerate(periods)}
    first = periods[0].start
    days = [first + dt.timedelta(days=i) for i in range((as_of - first).days + 1)]
    cost = cost_column(basis, SpendRollup)
    ids = [s.budget_id for s in wanted]
    period_of = {s.budget_id: s.month for s in wanted}
    stages: dict[int, dict[str, Decimal]] = {}
    for row in scope_sums(
        session,
        buckets={column[p]: SpendRollup.day >= p.start for p in periods},
        cost=cost,
        start=first,
        end=as_of,
        budget_ids=ids,
        by_stage=True,
    ):
        values = row._mapping
        budget_id = int(values["budget_id"])
        total = values[column[period_of[budget_id]]]
        stages.setdefault(budget_id, {})[str(values["stage"])] = Decimal(total or 0)
    for budget_id, totals in stages.items():
        drivers[budget_id].stages = [Driver(k, v) for k, v in _top(totals, limit)]
    for row in scope_sums(
        session,
        buckets={f"d{i}": SpendRollup.day == day for i, day in enumerate(days)},
        cost=cost,
        start=first,
        end=as_of,
        budget_ids=ids,
    ):
        values = row._mapping
        budget_id = int(values["budget_id"])
        start = period_of[budget_id].start
        in_period = {
            day: Decimal(values[f"d{i}"] or 0) for i, day in enumerate(days) if day >= start
        }
        drivers[budget_id].days = [Driver(f"{k:%a %b %-d}", v) for k, v in _top(in_period, limit)]


def _add_resource_drivers(
    session: Session,
    wanted: list[BudgetStatus],
    drivers: dict[int, Drivers],
    *,
    basis: CostBasis,
    limit: int,
) -> None:
    """Add each budget's top resources of its period so far.

    One statement sums the ledger from the earliest period's first day, by (model, team, stage,
    currency, resource), with one conditional sum per period, over the rows of the models, teams
    and stages asked about; each budget then adds up the groups of its scope.
    """
    as_of = wanted[0].as_of
    periods = sorted({s.month for s in wanted}, key=lambda p: p.start)
    column = {p: f"p{i}" for i, p in enumerate(periods)}
    cost = cost_column(basis)
    # shape -> scope key (the constrained values, then the currency) -> the budgets asking
    owners: dict[tuple[bool, bool, bool], dict[tuple[str, ...], list[BudgetStatus]]] = {}
    for status in wanted:
        shape = (
            status.model_name is not None,
            status.team_name is not None,
            status.stage is not None,
        )
        key = (*_scope_key(status, shape), status.currency)
        owners.setdefault(shape, {}).setdefault(key, []).append(status)
    resource = func.coalesce(DailySpend.resource_id, DailySpend.service)
    columns = (DailySpend.model, DailySpend.team, DailySpend.stage, DailySpend.currency)
    rows = session.execute(
        select(
            *columns,
            resource,
            *(func.sum(cost).filter(DailySpend.day >= p.start).label(column[p]) for p in periods),
        )
        .where(
            DailySpend.day >= periods[0].start,
            DailySpend.day <= as_of,
            _scopes_condition(session, wanted),
        )
        .group_by(*columns, resource)
    )
    # (shape, key, period) -> resource -> its cost in that scope's period
    totals: dict[tuple[Any, ...], dict[str, Decimal]] = {}
    position = {p: i for i, p in enumerate(periods)}
    for model, team, stage, currency, label, *sums in rows:
        values = (model, team, stage)
        for shape, keys in owners.items():
            scope = [v for v, on in zip(values, shape, strict=True) if on]
            key = (*(str(v) for v in scope), currency)
            if None in scope or key not in keys:
                continue
            for status in keys[key]:
                amount = sums[position[status.month]]
                if amount is not None:  # None: none of the rows is in this budget's period
                    group = totals.setdefault((shape, key, status.month), {})
                    group[label] = group.get(label, ZERO) + Decimal(amount)
    for shape, keys in owners.items():
        for key, statuses in keys.items():
            for status in statuses:
                group = totals.get((shape, key, status.month), {})
                top = sorted(group.items(), key=lambda item: (-item[1], item[0]))[:limit]
                drivers[status.budget_id].resources = [
                    Driver(str(label), amount) for label, amount in top if amount
                ]


def _scopes_condition(session: Session, wanted: list[BudgetStatus]) -> Any:
    """Return the ledger condition selecting the rows of the budgets' scopes (a superset)."""
    models = sorted({s.model_name for s in wanted if s.model_name is not None})
    teams = sorted({s.team_name for s in wanted if s.model_name is None and s.team_name})
    stages = sorted(
        {s.stage for s in wanted if s.model_name is None and s.team_name is None and s.stage}
    )
    parts = [
        *([among(session, DailySpend.model, models)] if models else []),
        *([among(session, DailySpend.team, teams)] if teams else []),
        *([among(session, DailySpend.stage, stages)] if stages else []),
    ]
    return or_(*parts) if parts else literal(False)
