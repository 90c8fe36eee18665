"""Budget status as of a day: period-to-date spend and forecast for every budget, in SQL.

A budget is daily, weekly (ISO, Monday to Sunday), monthly or quarterly (calendar quarters):
its spend counts from the start of its period (bot.periods.budget_period) through as_of, and
its forecast runs to the end of that period. A daily budget has no forecast: the ledger is
daily, so the day evaluated is already complete.

One statement aggregates the window of the daily rollup (the ledger summed by day, model, team and
stage; see bot.ingest.rollup) once, by model, team and stage with one conditional sum per bucket the
forecast needs, and rolls it up for every budget shape (model, team, stage, model×stage,
team×stage) with equality joins, so the cost is one scan however many budgets exist.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    Date,
    Text,
    and_,
    cast,
    func,
    literal,
    literal_column,
    or_,
    select,
    text,
    union_all,
)
from sqlalchemy.orm import Session

from bot import collector
from bot.db.engine import among
from bot.db.reading import dialect_name
from bot.db.schema import Budget, SpendRollup
from bot.money import CostBasis
from bot.periods import DAILY, MONTHLY, Period, budget_period
from bot.spend.coverage import covered_days
from bot.spend.forecast import (
    HISTORY_DAYS,
    RUN_RATE_DAYS,
    BudgetForecast,
    SpendSummary,
    forecast_month_end,
    history_days,
    weekday_shape_of,
)
from bot.spend.reports import cost_column

ZERO = Decimal(0)
# (model, team, stage): which dimensions a budget of each shape constrains
SHAPES: tuple[tuple[bool, bool, bool], ...] = (
    (True, False, False),
    (False, True, False),
    (False, False, True),
    (True, False, True),
    (False, True, True),
)


@dataclass(frozen=True, slots=True)  # tens of thousands per evaluation: slots build faster
class BudgetStatus:
    """One budget's period so far.

    `month` is the budget's current period (a calendar month unless `period_kind` says
    otherwise) and `month_to_date` its spend from the period's first day through as_of.
    """

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
    period_kind: str = MONTHLY  # daily, weekly, monthly or quarterly: what `amount` is per

    @property
    def percent(self) -> Decimal | None:
        """Return month-to-date as a percentage of the budget (None for a zero budget)."""
        return self.month_to_date * 100 / self.amount if self.amount else None

    @property
    def forecast_percent(self) -> Decimal | None:
        """Return the forecast as a percentage of the budget."""
        if self.forecast is None or self.forecast.amount is None or not self.amount:
            return None
        return self.forecast.amount * 100 / self.amount

    def reached(self, percent: int, value: Decimal | None = None) -> bool:
        """Return whether spend (or the given value) has reached `percent` of the budget."""
        spent = self.month_to_date if value is None else value
        if self.amount == 0:
            return spent > 0
        return spent * 100 >= self.amount * percent


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


def scope_sums(
    session: Session,
    *,
    buckets: dict[str, Any],
    cost: Any,
    start: dt.date,
    end: dt.date,
    budget_ids: list[int] | None = None,
    by_stage: bool = False,
    within: Any = None,
) -> list[Any]:
    """Sum the rollup over [start, end] into named buckets for every budget, in one statement.

    `buckets` maps a name to a condition on SpendRollup. The window is summed once by (model,
    team, stage, currency) and rolled up to each budget shape with equality joins; with
    `by_stage` each budget gets one row per stage it spans. `within`, a condition on
    SpendRollup, keeps only the rows of the scopes asked about (`budget_ids`' scopes) before
    summing.
    """
    day: Any = SpendRollup.day
    if dialect_name(session) == "sqlite":
        # SQLite would pick the day index and sort; `+day` steers it to the covering scan
        # index, whose (model, team, stage) order lets the grouping stream.
        day = literal_column("+spend_rollup.day", Date)
    base = (
        select(
            SpendRollup.model,
            SpendRollup.team,
            SpendRollup.stage,
            SpendRollup.currency,
            # FILTER, not sum(CASE ...): PostgreSQL then adds only the rows each bucket holds
            *(func.sum(cost).filter(condition).label(name) for name, condition in buckets.items()),
        )
        .where(day >= start, day <= end, *([within] if within is not None else []))
        .group_by(SpendRollup.model, SpendRollup.team, SpendRollup.stage, SpendRollup.currency)
        .cte("base")
    )
    # the same parameter in every shape's select: one array on PostgreSQL, not five IN lists
    among_ids = among(session, Budget.id, budget_ids) if budget_ids is not None else None
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
                *([among_ids] if among_ids is not None else []),
            )
            .group_by(*keys)
        )
    if dialect_name(session) != "postgresql":
        return list(session.execute(union_all(*selects)))
    # the window's groups fit in memory: hash them without spilling to disk
    session.execute(text("SET LOCAL work_mem = '64MB'"))
    # One process streams the window from the covering index in (model, team, stage, currency)
    # order and groups it as it goes; the parallel plan PostgreSQL otherwise picks sorts each
    # worker's share first: 1.09 s against 0.63 s for the evaluation at 100x on 2 cores.
    session.execute(text("SET LOCAL max_parallel_workers_per_gather = 0"))
    rows = list(session.execute(union_all(*selects)))
    session.execute(text("RESET max_parallel_workers_per_gather"))
    return rows


def to_date_bucket(kind: str) -> str:
    """Return the name of the bucket summing a `kind` budget's period to date."""
    return f"to_date_{kind}"


def _on_days(days_by_currency: dict[str, Sequence[dt.date]]) -> Any:
    """Return the rollup condition: a day among its currency's given days.

    With one currency the condition is on days alone: rows in any other currency are summed
    by currency apart and join no budget (every budget's currency is a key here).
    """

    def on(days: Sequence[dt.date]) -> Any:
        return SpendRollup.day == days[0] if len(days) == 1 else SpendRollup.day.in_(days)

    given = {code: days for code, days in sorted(days_by_currency.items()) if days}
    if len(days_by_currency) == 1:
        return on(next(iter(given.values()))) if given else literal(False)
    parts = [and_(SpendRollup.currency == code, on(days)) for code, days in given.items()]
    return or_(*parts) if parts else literal(False)


def history_bucket(index: int) -> str:
    """Return the name of the bucket summing the history's index-th covered day."""
    return f"h{index}"


def budget_sums(
    *,
    session: Session,
    as_of: dt.date,
    covered: dict[str, Sequence[dt.date]],
    basis: CostBasis = CostBasis.BILLED,
    periods: tuple[str, ...] = (MONTHLY,),
) -> dict[int, dict[str, Decimal]]:
    """Return, per budget id, each period's to-date sum and each covered history day's.

    `covered` holds, per currency, the ledger's covered days: the history-day buckets (the
    run-rate is their last seven) count only those of the history window (a day no source had
    data for is unknown, not $0).
    `periods` are the kinds of budget period in use: the window read reaches back to the
    earliest of their first days (a quarter's, when there is a quarterly budget).
    """
    history = {code: history_days(days, as_of) for code, days in covered.items()}
    starts = {kind: budget_period(kind, as_of).start for kind in periods}
    conditions: dict[str, Any] = {
        **{to_date_bucket(kind): SpendRollup.day >= start for kind, start in starts.items()},
    }
    # one bucket per covered day of the history (its n-th, per currency): the weekday pattern
    # is learned from the usual ones (bot/spend/forecast.weekday_shape)
    for index in range(max((len(days) for days in history.values()), default=0)):
        conditions[history_bucket(index)] = _on_days(
            {code: days[index : index + 1] for code, days in history.items()}
        )
    rows = scope_sums(
        session,
        buckets=conditions,
        cost=cost_column(basis, SpendRollup),
        start=min(*starts.values(), as_of - dt.timedelta(days=HISTORY_DAYS - 1)),
        end=as_of,
    )
    names = list(conditions)  # a row is (budget_id, *buckets in this order)
    return {
        int(budget_id): {
            name: ZERO if v is None else v for name, v in zip(names, sums, strict=True)
        }
        for budget_id, *sums in rows
    }


@dataclass(frozen=True)
class Evaluation:
    """Every budget's status, with the daily sums the evaluation read on the way.

    `day_sums` gives a budget's spend on each covered day of the history window (the last 28
    days): what its alert's top days come from, without reading the window again
    (bot/budgets/drivers.py).
    """

    statuses: list[BudgetStatus]
    basis: CostBasis
    _sums: dict[int, dict[str, Decimal]]
    _histories: dict[str, tuple[dt.date, ...]]

    def known_days(self, currency: str) -> tuple[dt.date, ...]:
        """Return the days `day_sums` holds for a budget in this currency."""
        return self._histories.get(currency, ())

    def day_sums(self, budget_id: int, currency: str) -> dict[dt.date, Decimal]:
        """Return the budget's spend on each of `known_days` (a day without spend: no entry)."""
        values = self._sums.get(budget_id)
        if not values:
            return {}
        days = self.known_days(currency)
        found = (values.get(name) for name in _HISTORY_BUCKETS[: len(days)])
        return {day: v for day, v in zip(days, found, strict=True) if v}


def evaluate_budgets(
    *,
    session: Session,
    as_of: dt.date,
    basis: CostBasis = CostBasis.BILLED,
    scopes: list[str] | None = None,
) -> list[BudgetStatus]:
    """Return the status of every budget (or of these scopes) as of a day, through that day."""
    return evaluate(session=session, as_of=as_of, basis=basis, scopes=scopes).statuses


def evaluate(
    *,
    session: Session,
    as_of: dt.date,
    basis: CostBasis = CostBasis.BILLED,
    scopes: list[str] | None = None,
) -> Evaluation:
    """Evaluate every budget (or these scopes) as of a day, through that day."""
    with collector.paused():  # tens of thousands of statuses and forecasts (bot.collector)
        return _evaluate(session=session, as_of=as_of, basis=basis, scopes=scopes)


def _evaluate(
    *, session: Session, as_of: dt.date, basis: CostBasis, scopes: list[str] | None
) -> Evaluation:
    query = select(
        Budget.id,
        Budget.scope,
        Budget.model_name,
        Budget.team_name,
        Budget.stage,
        Budget.monthly_amount,
        Budget.period,
        Budget.currency,
        # as text: tens of thousands of budgets share a few lists, each parsed once (_thresholds)
        cast(Budget.thresholds, Text).label("thresholds"),
        Budget.forecast,
        Budget.forecast_threshold,
        Budget.amount_revision,
    ).order_by(Budget.scope)
    if scopes is not None:
        query = query.where(Budget.scope.in_(scopes))
    # plain tuples: a Row's attribute lookups cost more than the rest of this loop (50,000 rows)
    rows = [tuple(row) for row in session.execute(query)]
    if not rows:
        return Evaluation([], basis, {}, {})
    periods = tuple(sorted({row[6] or MONTHLY for row in rows}))
    # the forecast's history: the days some source covered, in each budget's currency
    start = min(budget_period(kind, as_of).start for kind in periods)
    start = min(start, as_of - dt.timedelta(days=HISTORY_DAYS - 1))
    covered: dict[str, Sequence[dt.date]] = {
        code: tuple(covered_days(session, start=start, end=as_of, currency=code))
        for code in sorted({row[7] for row in rows})
    }
    sums = budget_sums(session=session, as_of=as_of, covered=covered, basis=basis, periods=periods)
    # what every budget of a currency (and of a kind of period) shares is worked out once
    histories = {code: history_days(days, as_of) for code, days in covered.items()}
    period_of = {kind: budget_period(kind, as_of) for kind in periods}
    # a budget without spend in the window: the same summary for every one of a currency and kind
    no_spend: dict[tuple[str, str], tuple[Decimal, BudgetForecast | None]] = {}
    statuses = []
    for (
        budget_id,
        scope,
        model_name,
        team_name,
        stage,
        amount,
        kind,
        currency,
        thresholds,
        forecast_on,
        forecast_threshold,
        revision,
    ) in rows:
        kind = kind or MONTHLY
        period = period_of[kind]
        values = sums.get(budget_id)
        if values is None and (currency, kind) in no_spend:
            to_date, forecast = no_spend[currency, kind]
        else:
            to_date, forecast = _period_so_far(
                values or {}, histories[currency], covered[currency], period, as_of, kind
            )
            if values is None:
                no_spend[currency, kind] = (to_date, forecast)
        statuses.append(
            BudgetStatus(
                budget_id=budget_id,
                scope=scope,
                model_name=model_name,
                team_name=team_name,
                stage=stage,
                amount=Decimal(amount),
                currency=currency,
                thresholds=_thresholds(thresholds),
                forecast_enabled=bool(forecast_on),
                forecast_threshold=int(forecast_threshold or 100),
                month=period,
                as_of=as_of,
                month_to_date=to_date,
                forecast=forecast,
                revision=int(revision or 0),
                period_kind=kind,
            )
        )
    return Evaluation(statuses, basis, sums, histories)


@lru_cache(maxsize=256)
def _thresholds(stored: str | None) -> tuple[int, ...]:
    """Return a budget's thresholds, ascending, from their stored JSON text."""
    return tuple(sorted(json.loads(stored) or [])) if stored else ()


_HISTORY_BUCKETS = tuple(history_bucket(i) for i in range(HISTORY_DAYS))


def _period_so_far(
    values: dict[str, Decimal],
    history: tuple[dt.date, ...],
    covered: Sequence[dt.date],
    period: Period,
    as_of: dt.date,
    kind: str,
) -> tuple[Decimal, BudgetForecast | None]:
    """Return one budget's spend to date and its forecast (None for a daily budget)."""
    to_date = values.get(to_date_bucket(kind), ZERO)
    if kind == DAILY:
        return to_date, None  # the day evaluated is complete: nothing to learn a shape for
    daily = [values.get(name, ZERO) for name in _HISTORY_BUCKETS[: len(history)]]
    shape_days, weekday_totals = weekday_shape_of(history, daily)
    summary = SpendSummary(
        as_of=as_of,
        covered=tuple(covered),
        month_to_date=to_date,
        # the run-rate's days are the history's last seven (forecast.run_rate_days)
        last_7_days=sum(daily[-RUN_RATE_DAYS:], ZERO),
        weekday_totals=weekday_totals,
        period=period,
        shape_days=shape_days,
    )
    return to_date, forecast_month_end(summary)
