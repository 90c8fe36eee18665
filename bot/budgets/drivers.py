"""What drove a budget's period so far (its month, week, day or quarter): top stages, resources
and days."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    Select,
    String,
    func,
    literal,
    select,
    tuple_,
    union_all,
)
from sqlalchemy.orm import Session

from bot.budgets.evaluate import SHAPES, ZERO, BudgetStatus, scope_sums
from bot.db.schema import DailySpend, SpendRollup
from bot.money import CostBasis
from bot.periods import Period
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

    Budgets are taken a period at a time (all the monthly ones, then the weekly ones, ...).
    Stages and days come from one pass over the period: a sum per day for each budget and stage.
    Resources come from a second, summed by (model, team, stage, resource); each budget shape
    rolls those groups up by its own key, filtered to the keys asked about, and ranks them there,
    so no ledger row is joined to the budgets table.
    """
    wanted = list(statuses)
    drivers: dict[int, Drivers] = {s.budget_id: Drivers() for s in wanted}
    by_period: dict[Period, list[BudgetStatus]] = {}
    for status in wanted:
        by_period.setdefault(status.month, []).append(status)
    for period, group in by_period.items():
        _add_period_drivers(session, group, drivers, period=period, basis=basis, limit=limit)
    return drivers


def _add_period_drivers(
    session: Session,
    wanted: list[BudgetStatus],
    drivers: dict[int, Drivers],
    *,
    period: Period,
    basis: CostBasis,
    limit: int,
) -> None:
    """Add the drivers of budgets that share one period (e.g. this month)."""
    cost = cost_column(basis)
    as_of = wanted[0].as_of
    month = period
    ids = [s.budget_id for s in wanted]
    days = [month.start + dt.timedelta(days=i) for i in range((as_of - month.start).days + 1)]
    by_stage_day: dict[int, dict[str, dict[dt.date, Decimal]]] = {}
    rows = scope_sums(
        session,
        buckets={f"d{i}": SpendRollup.day == day for i, day in enumerate(days)},
        cost=cost_column(basis, SpendRollup),
        start=month.start,
        end=as_of,
        budget_ids=ids,
        by_stage=True,
    )
    for row in rows:
        values = row._mapping
        per_day = by_stage_day.setdefault(int(values["budget_id"]), {})
        per_day[str(values["stage"])] = {
            day: Decimal(values[f"d{i}"] or 0) for i, day in enumerate(days)
        }
    for budget_id, stages in by_stage_day.items():
        found = drivers[budget_id]
        stage_totals = {stage: sum(v.values(), ZERO) for stage, v in stages.items()}
        found.stages = [Driver(str(k), v) for k, v in _top(stage_totals, limit)]
        day_totals = {day: sum((v[day] for v in stages.values()), ZERO) for day in days}
        found.days = [Driver(f"{k:%a %b %-d}", v) for k, v in _top(day_totals, limit)]
    _add_resource_drivers(session, wanted, drivers, cost=cost, month=month, limit=limit)


def _budgets_by_shape(wanted: list[BudgetStatus]) -> dict[int, dict[tuple[str, ...], list[int]]]:
    """Return shape index -> scope key (with the budget's currency last) -> budget ids."""
    owners: dict[int, dict[tuple[str, ...], list[int]]] = {}
    for status in wanted:
        shape = (
            status.model_name is not None,
            status.team_name is not None,
            status.stage is not None,
        )
        key = (*_scope_key(status, shape), status.currency)
        owners.setdefault(SHAPES.index(shape), {}).setdefault(key, []).append(status.budget_id)
    return owners


def _ranked_resources(base: Any, index: int, keys: dict[tuple[str, ...], list[int]]) -> Select[Any]:
    """Select each scope's resources of one budget shape, ranked by cost within the scope."""
    key_columns = [
        c
        for c, on in zip((base.c.model, base.c.team, base.c.stage), SHAPES[index], strict=True)
        if on
    ] + [base.c.currency]
    total = func.sum(base.c.cost)
    rank = func.row_number().over(partition_by=key_columns, order_by=total.desc())
    padded = [*key_columns[:-1], literal(None, String)][:2]
    scope_filter = tuple_(*key_columns).in_(list(keys))
    return (
        select(
            literal(index).label("shape"),
            padded[0].label("k0"),
            padded[1].label("k1"),
            base.c.currency.label("currency"),
            base.c.resource.label("label"),
            total.label("cost"),
            rank.label("rank"),
        )
        .where(scope_filter)
        .group_by(*key_columns, base.c.resource)
    )


def _add_resource_drivers(
    session: Session,
    wanted: list[BudgetStatus],
    drivers: dict[int, Drivers],
    *,
    cost: Any,
    month: Period,
    limit: int,
) -> None:
    """Add each budget's top resources of its period so far."""
    as_of = wanted[0].as_of
    owners = _budgets_by_shape(wanted)
    columns = (DailySpend.model, DailySpend.team, DailySpend.stage, DailySpend.currency)
    resource = func.coalesce(DailySpend.resource_id, DailySpend.service)
    base = (
        select(*columns, resource.label("resource"), func.sum(cost).label("cost"))
        .where(DailySpend.day >= month.start, DailySpend.day <= as_of)
        .group_by(*columns, resource)
        .cte("by_resource")
    )
    selects = [_ranked_resources(base, index, keys) for index, keys in owners.items()]
    ranked = (union_all(*selects) if len(selects) > 1 else selects[0]).subquery()
    query = (
        select(
            ranked.c.shape,
            ranked.c.k0,
            ranked.c.k1,
            ranked.c.currency,
            ranked.c.label,
            ranked.c.cost,
        )
        .where(ranked.c.rank <= limit)
        .order_by(ranked.c.shape, ranked.c.k0, ranked.c.k1, ranked.c.currency, ranked.c.rank)
    )
    for index, k0, k1, currency, label, amount in session.execute(query):
        key = (str(k0), currency) if k1 is None else (str(k0), str(k1), currency)
        for budget_id in owners[int(index)].get(key, ()) if amount else ():
            drivers[budget_id].resources.append(Driver(str(label), Decimal(amount)))
