"""What drove a budget's period so far (its month, week, day or quarter): top stages, resources
and days."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import func, literal, or_, select, text
from sqlalchemy.orm import Session

from bot.budgets.evaluate import ZERO, BudgetStatus, Evaluation, scope_sums
from bot.db.engine import among, read_ahead, read_beside
from bot.db.reading import Reader, dialect_name
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
    evaluation: Evaluation | None = None,
) -> dict[int, Drivers]:
    """Return the top stages, resources and days of each budget's period so far.

    Stages come from the rollup, one sum per budget and stage for every period at once. Days
    come from `evaluation` (the evaluation these statuses are from, in the same basis), which
    summed each covered day of the last 28 already; the rollup is read only for the days of a
    period it does not hold (a quarter's first weeks). Resources come from one pass over the
    ledger for every period at once, summed by (model, team, stage, currency, resource) with one
    sum per period, reading only the rows of the scopes asked about; each budget's are ranked
    here, so no ledger row is joined to the budgets table.
    """
    wanted = list(statuses)
    drivers: dict[int, Drivers] = {s.budget_id: Drivers() for s in wanted}
    if not wanted:
        return drivers
    known = evaluation if evaluation is not None and evaluation.basis == basis else None
    resources = _resource_statement(session, wanted, basis)
    # the ledger's pass (the longest read) runs beside the session where it can, while the
    # session sums the rollup's stages and days
    with read_beside(session, lambda side: _resource_rows(side, resources)) as pending:
        _add_stage_drivers(session, wanted, drivers, basis=basis, limit=limit)
        _add_day_drivers(session, wanted, drivers, known, basis=basis, limit=limit)
        rows = _resource_rows(session, resources) if pending is None else pending.result()
    _add_resource_drivers(rows, wanted, drivers, limit=limit)
    return drivers


def _add_stage_drivers(
    session: Session,
    wanted: list[BudgetStatus],
    drivers: dict[int, Drivers],
    *,
    basis: CostBasis,
    limit: int,
) -> None:
    """Add each budget's top stages of its period so far, from the rollup.

    One statement for every period at once: per budget and stage, one sum per period; each
    budget keeps its own period's.
    """
    as_of = wanted[0].as_of
    periods = sorted({s.month for s in wanted}, key=lambda p: p.start)
    column = {p: f"p{i}" for i, p in enumerate(periods)}
    period_of = {s.budget_id: s.month for s in wanted}
    stages: dict[int, dict[str, Decimal]] = {}
    for row in scope_sums(
        session,
        buckets={column[p]: SpendRollup.day >= p.start for p in periods},
        cost=cost_column(basis, SpendRollup),
        start=periods[0].start,
        end=as_of,
        budget_ids=[s.budget_id for s in wanted],
        by_stage=True,
        within=_scopes_condition(session, wanted, SpendRollup),
    ):
        values = row._mapping
        budget_id = int(values["budget_id"])
        total = values[column[period_of[budget_id]]]
        stages.setdefault(budget_id, {})[str(values["stage"])] = Decimal(total or 0)
    for budget_id, totals in stages.items():
        drivers[budget_id].stages = [Driver(k, v) for k, v in _top(totals, limit)]


def _add_day_drivers(
    session: Session,
    wanted: list[BudgetStatus],
    drivers: dict[int, Drivers],
    known: Evaluation | None,
    *,
    basis: CostBasis,
    limit: int,
) -> None:
    """Add each budget's top days of its period so far.

    The days `known` summed are taken from it; the rest of each period (every day without an
    evaluation) comes from the rollup, in one statement with one sum per such day.
    """
    as_of = wanted[0].as_of
    # the days of a period that the evaluation did not sum, worked out once per period and currency
    unknown: dict[tuple[Period, str], list[dt.date]] = {}
    for status in wanted:
        key = (status.month, status.currency)
        if key not in unknown:
            have = set(known.known_days(status.currency)) if known is not None else set()
            span = (as_of - status.month.start).days + 1
            every = (status.month.start + dt.timedelta(days=i) for i in range(span))
            unknown[key] = [day for day in every if day not in have]
    sums: dict[int, dict[dt.date, Decimal]] = {
        s.budget_id: known.day_sums(s.budget_id, s.currency) if known is not None else {}
        for s in wanted
    }
    asked = [s for s in wanted if unknown[s.month, s.currency]]
    if asked:
        days = sorted({day for s in asked for day in unknown[s.month, s.currency]})
        missing = {s.budget_id: set(unknown[s.month, s.currency]) for s in asked}
        for row in scope_sums(
            session,
            buckets={f"d{i}": SpendRollup.day == day for i, day in enumerate(days)},
            cost=cost_column(basis, SpendRollup),
            start=days[0],
            end=days[-1],
            budget_ids=[s.budget_id for s in asked],
            within=_scopes_condition(session, asked, SpendRollup),
        ):
            budget_id, *values = row  # one sum per day, in the order of `days`
            own = missing[budget_id]
            sums[budget_id].update(
                (day, Decimal(v)) for day, v in zip(days, values, strict=True) if v and day in own
            )
    for status in wanted:
        start = status.month.start
        in_period = {day: v for day, v in sorted(sums[status.budget_id].items()) if day >= start}
        drivers[status.budget_id].days = [
            Driver(f"{k:%a %b %-d}", v) for k, v in _top(in_period, limit)
        ]


def _resource_statement(session: Session, wanted: list[BudgetStatus], basis: CostBasis) -> Any:
    """Return the statement summing the ledger for the budgets' top resources.

    From the earliest period's first day, by (model, team, stage, currency, resource), with
    one conditional sum per period (`p0`, `p1`, ... in the periods' order), over the rows of
    the models, teams and stages asked about.
    """
    as_of = wanted[0].as_of
    periods = _periods(wanted)
    cost = cost_column(basis)
    resource = func.coalesce(DailySpend.resource_id, DailySpend.service)
    columns = (DailySpend.model, DailySpend.team, DailySpend.stage, DailySpend.currency)
    return (
        select(
            *columns,
            resource,
            *(
                func.sum(cost).filter(DailySpend.day >= p.start).label(f"p{i}")
                for i, p in enumerate(periods)
            ),
        )
        .where(
            DailySpend.day >= periods[0].start,
            DailySpend.day <= as_of,
            _scopes_condition(session, wanted, DailySpend),
        )
        .group_by(*columns, resource)
    )


def _periods(wanted: list[BudgetStatus]) -> list[Period]:
    return sorted({s.month for s in wanted}, key=lambda p: p.start)


def _resource_rows(reader: Reader, statement: Any) -> list[Any]:
    """Run the resource statement (on the session, or on a connection beside it)."""
    if dialect_name(reader) == "postgresql":
        # its groups (tens of thousands at 100x) fit in memory: hash them without spilling
        reader.execute(text("SET LOCAL work_mem = '64MB'"))
        read_ahead(reader)  # most of the month's ledger pages, maybe not cached
    return list(reader.execute(statement))


def _add_resource_drivers(
    rows: list[Any],
    wanted: list[BudgetStatus],
    drivers: dict[int, Drivers],
    *,
    limit: int,
) -> None:
    """Add each budget's top resources of its period so far, from the resource statement's
    rows: each budget adds up the groups of its scope."""
    periods = _periods(wanted)
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


def _scopes_condition(session: Session, wanted: list[BudgetStatus], table: Any) -> Any:
    """Return the condition on the ledger (DailySpend) or its rollup (SpendRollup) selecting the
    rows of the budgets' scopes (a superset)."""
    models = sorted({s.model_name for s in wanted if s.model_name is not None})
    teams = sorted({s.team_name for s in wanted if s.model_name is None and s.team_name})
    stages = sorted(
        {s.stage for s in wanted if s.model_name is None and s.team_name is None and s.stage}
    )
    parts = [
        *([among(session, table.model, models)] if models else []),
        *([among(session, table.team, teams)] if teams else []),
        *([among(session, table.stage, stages)] if stages else []),
    ]
    return or_(*parts) if parts else literal(False)
