"""Budget status as of a day: month-to-date spend and forecast for every budget, in SQL.

One statement aggregates the window of the daily rollup (the ledger summed by day, model, team and
stage; see bot.ingest.rollup) once, by model, team and stage with one conditional sum per bucket the
forecast needs, and rolls it up for every budget shape (model, team, stage, model×stage,
team×stage) with equality joins, so the cost is one scan however many budgets exist.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    Date,
    String,
    and_,
    case,
    func,
    literal,
    literal_column,
    select,
    text,
    tuple_,
    union_all,
)
from sqlalchemy.orm import Session

from bot.budgets.forecast import (
    HISTORY_DAYS,
    RUN_RATE_DAYS,
    BudgetForecast,
    SpendSummary,
    forecast_month_end,
    history_window,
)
from bot.db.schema import Budget, DailySpend, SpendRollup
from bot.money import CostBasis
from bot.periods import Period, month_of
from bot.spend.reports import cost_column

ZERO = Decimal(0)
BUCKETS = ("mtd", "last7", *(f"wd{i}" for i in range(7)))
# (model, team, stage): which dimensions a budget of each shape constrains
SHAPES: tuple[tuple[bool, bool, bool], ...] = (
    (True, False, False),
    (False, True, False),
    (False, False, True),
    (True, False, True),
    (False, True, True),
)


@dataclass(frozen=True)
class BudgetStatus:
    """One budget's month so far."""

    budget_id: int
    scope: str
    model_name: str | None
    team_name: str | None
    stage: str | None
    amount: Decimal
    thresholds: tuple[int, ...]
    forecast_enabled: bool
    forecast_threshold: int
    month: Period
    as_of: dt.date
    month_to_date: Decimal
    forecast: BudgetForecast | None
    revision: int = 0  # the budget's amount revision: its alerts' keys name it
    currency: str = "USD"  # the amount's: month_to_date and the forecast count only spend in it

    @property
    def percent(self) -> Decimal | None:
        """Return month-to-date as a percentage of the budget (None for a zero budget)."""
        return self.month_to_date * 100 / self.amount if self.amount else None

    @property
    def forecast_percent(self) -> Decimal | None:
        """Return the forecast as a percentage of the budget."""
        if self.forecast is None or not self.amount:
            return None
        return self.forecast.amount * 100 / self.amount

    def reached(self, percent: int, value: Decimal | None = None) -> bool:
        """Return whether spend (or the given value) has reached `percent` of the budget."""
        spent = self.month_to_date if value is None else value
        if self.amount == 0:
            return spent > 0
        return spent * 100 >= self.amount * percent


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


def _shape_of(
    budget_model: Any, budget_team: Any, budget_stage: Any, shape: tuple[bool, bool, bool]
) -> list[Any]:
    columns = (budget_model, budget_team, budget_stage)
    return [
        c.is_not(None) if wanted else c.is_(None) for c, wanted in zip(columns, shape, strict=True)
    ]


def _join_condition(source: Any, shape: tuple[bool, bool, bool]) -> Any:
    pairs = (
        (source.model, Budget.model_name),
        (source.team, Budget.team_name),
        (source.stage, Budget.stage),
    )
    # only spend billed in the budget's currency counts against it
    return and_(
        source.currency == Budget.currency,
        *(a == b for (a, b), wanted in zip(pairs, shape, strict=True) if wanted),
    )


def ledger_first_day(session: Session) -> dt.date | None:
    """Return the first day the ledger covers."""
    return session.scalar(select(func.min(DailySpend.day)))


def _scope_sums(
    session: Session,
    *,
    buckets: dict[str, Any],
    cost: Any,
    start: dt.date,
    end: dt.date,
    budget_ids: list[int] | None = None,
    by_stage: bool = False,
) -> list[Any]:
    """Sum the rollup over [start, end] into named buckets for every budget, in one statement.

    `buckets` maps a name to a condition on SpendRollup. The window is summed once by (model,
    team, stage, currency) and rolled up to each budget shape with equality joins; with
    `by_stage` each budget gets one row per stage it spans.
    """
    day: Any = SpendRollup.day
    if session.get_bind().dialect.name == "sqlite":
        # SQLite would pick the day index and sort; `+day` steers it to the covering scan
        # index, whose (model, team, stage) order lets the grouping stream.
        day = literal_column("+spend_rollup.day", Date)
    base = (
        select(
            SpendRollup.model,
            SpendRollup.team,
            SpendRollup.stage,
            SpendRollup.currency,
            *(func.sum(case((condition, cost))).label(name) for name, condition in buckets.items()),
        )
        .where(day >= start, day <= end)
        .group_by(SpendRollup.model, SpendRollup.team, SpendRollup.stage, SpendRollup.currency)
        .cte("base")
    )
    selects = []
    for shape in SHAPES:
        keys = [Budget.id, base.c.stage] if by_stage else [Budget.id]
        selects.append(
            select(
                Budget.id.label("budget_id"),
                *([base.c.stage.label("stage")] if by_stage else []),
                *(func.sum(base.c[name]).label(name) for name in buckets),
            )
            .select_from(Budget)
            .join(base, _join_condition(base.c, shape))
            .where(
                *_shape_of(Budget.model_name, Budget.team_name, Budget.stage, shape),
                *([Budget.id.in_(budget_ids)] if budget_ids is not None else []),
            )
            .group_by(*keys)
        )
    if session.get_bind().dialect.name == "postgresql":
        # the window's groups fit in memory: hash them without spilling to disk
        session.execute(text("SET LOCAL work_mem = '64MB'"))
    return list(session.execute(union_all(*selects)))


def budget_sums(
    *, session: Session, as_of: dt.date, first_day: dt.date, basis: CostBasis = CostBasis.BILLED
) -> dict[int, dict[str, Decimal]]:
    """Return, per budget id, the month-to-date, last-7-day and per-weekday history sums."""
    month = month_of(as_of)
    history = history_window(as_of, first_day)
    conditions: dict[str, Any] = {
        "mtd": SpendRollup.day >= month.start,
        "last7": SpendRollup.day >= as_of - dt.timedelta(days=RUN_RATE_DAYS - 1),
    }
    for weekday in range(7):
        days = [d for d in history if d.weekday() == weekday]
        conditions[f"wd{weekday}"] = SpendRollup.day.in_(days) if days else literal(False)
    rows = _scope_sums(
        session,
        buckets=conditions,
        cost=cost_column(basis, SpendRollup),
        start=min(month.start, as_of - dt.timedelta(days=HISTORY_DAYS - 1)),
        end=as_of,
    )
    result: dict[int, dict[str, Decimal]] = {}
    for row in rows:
        values = row._mapping
        result[int(values["budget_id"])] = {name: Decimal(values[name] or 0) for name in BUCKETS}
    return result


def evaluate_budgets(
    *, session: Session, as_of: dt.date, basis: CostBasis = CostBasis.BILLED
) -> list[BudgetStatus]:
    """Return the status of every budget as of a day (spend through that day, inclusive)."""
    month = month_of(as_of)
    first_day = ledger_first_day(session) or month.start
    sums = budget_sums(session=session, as_of=as_of, first_day=first_day, basis=basis)
    empty = dict.fromkeys(BUCKETS, ZERO)
    statuses = []
    rows = session.execute(
        select(
            Budget.id,
            Budget.scope,
            Budget.model_name,
            Budget.team_name,
            Budget.stage,
            Budget.monthly_amount,
            Budget.currency,
            Budget.thresholds,
            Budget.forecast,
            Budget.forecast_threshold,
            Budget.amount_revision,
        ).order_by(Budget.scope)
    )
    for row in rows:
        values = sums.get(row.id, empty)
        summary = SpendSummary(
            as_of=as_of,
            first_day=first_day,
            month_to_date=values["mtd"],
            last_7_days=values["last7"],
            weekday_totals=tuple(values[f"wd{i}"] for i in range(7)),
        )
        statuses.append(
            BudgetStatus(
                budget_id=row.id,
                scope=row.scope,
                model_name=row.model_name,
                team_name=row.team_name,
                stage=row.stage,
                amount=Decimal(row.monthly_amount),
                currency=row.currency,
                thresholds=tuple(sorted(row.thresholds or [])),
                forecast_enabled=bool(row.forecast),
                forecast_threshold=int(row.forecast_threshold or 100),
                month=month,
                as_of=as_of,
                month_to_date=values["mtd"],
                forecast=forecast_month_end(summary),
                revision=int(row.amount_revision or 0),
            )
        )
    return statuses


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
    """Return the top stages, resources and days of each budget's month so far.

    Stages and days come from one pass over the month: a sum per day for each budget and stage.
    Resources come from a second, summed by (model, team, stage, resource); each budget shape
    rolls those groups up by its own key, filtered to the keys asked about, and ranks them there,
    so no ledger row is joined to the budgets table.
    """
    wanted = list(statuses)
    drivers: dict[int, Drivers] = {s.budget_id: Drivers() for s in wanted}
    if not wanted:
        return drivers
    cost = cost_column(basis)
    as_of = wanted[0].as_of
    month = month_of(as_of)
    ids = [s.budget_id for s in wanted]
    days = [month.start + dt.timedelta(days=i) for i in range((as_of - month.start).days + 1)]
    by_stage_day: dict[int, dict[str, dict[dt.date, Decimal]]] = {}
    rows = _scope_sums(
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
    return drivers


def _add_resource_drivers(
    session: Session,
    wanted: list[BudgetStatus],
    drivers: dict[int, Drivers],
    *,
    cost: Any,
    month: Period,
    limit: int,
) -> None:
    """Add each budget's top resources of the month so far."""
    as_of = wanted[0].as_of
    # shape index -> scope key (with the budget's currency last) -> budget ids
    owners: dict[int, dict[tuple[str, ...], list[int]]] = {}
    for status in wanted:
        shape = (
            status.model_name is not None,
            status.team_name is not None,
            status.stage is not None,
        )
        key = (*_scope_key(status, shape), status.currency)
        owners.setdefault(SHAPES.index(shape), {}).setdefault(key, []).append(status.budget_id)
    columns = (DailySpend.model, DailySpend.team, DailySpend.stage, DailySpend.currency)
    resource = func.coalesce(DailySpend.resource_id, DailySpend.service)
    base = (
        select(*columns, resource.label("resource"), func.sum(cost).label("cost"))
        .where(DailySpend.day >= month.start, DailySpend.day <= as_of)
        .group_by(*columns, resource)
        .cte("by_resource")
    )
    selects = []
    for index, keys in owners.items():
        key_columns = [
            c
            for c, on in zip((base.c.model, base.c.team, base.c.stage), SHAPES[index], strict=True)
            if on
        ] + [base.c.currency]
        total = func.sum(base.c.cost)
        rank = func.row_number().over(partition_by=key_columns, order_by=total.desc())
        padded = [*key_columns[:-1], literal(None, String)][:2]
        scope_filter = tuple_(*key_columns).in_(list(keys))
        selects.append(
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
