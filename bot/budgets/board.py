"""Where each budget stands in its period (this month, week, day or quarter): spent, percent
used, forecast to the period's end."""

from __future__ import annotations

import datetime as dt
import difflib
from dataclasses import dataclass, field
from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import Budget, DailySpend
from bot.errors import NotFoundError
from bot.money import CostBasis, percent_of
from bot.periods import MONTHLY, Period, budget_period
from bot.spend.coverage import forecast_covered_days
from bot.spend.daily import ReportingWindow, daily_totals, reporting_window, scope_filters
from bot.spend.forecast import Forecast, forecast_month
from bot.spend.reports import cost_column


@dataclass
class BudgetBoardRow:
    """One budget's row on the /budget board (alerts evaluate budgets.evaluate.BudgetStatus)."""

    scope: str
    amount: Decimal
    thresholds: list[int]
    forecast_alerts: bool
    spent: Decimal
    forecast: Forecast
    updated_by: str | None
    updated_at: dt.datetime | None
    currency: str = "USD"  # the amount's: spent and forecast count only spend billed in it
    # the scope's period-to-date spend billed in other currencies, which the budget cannot count
    not_counted: dict[str, Decimal] = field(default_factory=dict)
    period_kind: str = MONTHLY  # what the amount is per: daily, weekly, monthly, quarterly
    period: Period | None = None  # the budget's current period; None: the board's month

    @property
    def used(self) -> Decimal | None:
        """Return spend so far as a percentage of the budget."""
        return percent_of(self.spent, self.amount)

    @property
    def forecast_used(self) -> Decimal | None:
        """Return the forecast as a percentage of the budget."""
        if self.forecast.amount is None:
            return None
        return percent_of(self.forecast.amount, self.amount)


@dataclass
class BudgetBoard:
    span: ReportingWindow
    basis: CostBasis
    statuses: list[BudgetBoardRow]


def normalise_scope(text: str) -> str:
    """Accept `recsys` as shorthand for `model:recsys`; lower-case the rest."""
    scope = text.strip().lower()
    return scope if ":" in scope else f"model:{scope}"


def current_amount(session: Session, scope: str) -> tuple[Decimal, str] | None:
    """Return a scope's budget amount and its period kind, or None when it has none."""
    row = session.execute(
        select(Budget.monthly_amount, Budget.period).where(Budget.scope == scope)
    ).first()
    return None if row is None else (row[0], row[1])


def budget_status(
    session: Session, budget: Budget, span: ReportingWindow, basis: CostBasis = CostBasis.BILLED
) -> BudgetBoardRow:
    """Compute one budget's period so far and its forecast to the period's end, from spend in
    the budget's currency."""
    period = budget_period(budget.period, span.as_of) if budget.period != MONTHLY else span.month
    start = min(period.start, span.query_start())
    scope = scope_filters(budget.scope)
    end = span.as_of + dt.timedelta(days=1)
    daily = daily_totals(
        session,
        where=[*scope, DailySpend.currency == budget.currency],
        start=start,
        end=end,
        basis=basis,
    )
    covered = forecast_covered_days(
        session, as_of=span.as_of, period_start=period.start, currency=budget.currency
    )
    forecast = forecast_month(daily, period, span.as_of, covered=covered)
    cost = cost_column(basis)
    others = session.execute(
        select(DailySpend.currency, func.sum(cost))
        .where(
            *scope,
            DailySpend.currency != budget.currency,
            DailySpend.day >= period.start,
            DailySpend.day < end,
        )
        .group_by(DailySpend.currency)
        .order_by(DailySpend.currency)
    )
    return BudgetBoardRow(
        budget.scope,
        budget.monthly_amount,
        list(budget.thresholds or []),
        budget.forecast,
        forecast.actual,
        forecast,
        budget.updated_by,
        budget.updated_at,
        budget.currency,
        {code: Decimal(total or 0) for code, total in others},
        budget.period,
        period,
    )


def budget_board(
    *,
    session: Session,
    today: dt.date,
    scope: str | None = None,
    basis: CostBasis = CostBasis.BILLED,
) -> BudgetBoard:
    """Return every budget's status (or one scope's), most used first."""
    span = reporting_window(session, today, None)
    query = select(Budget).order_by(Budget.scope)
    if scope is not None:
        wanted = normalise_scope(scope)
        query = query.where(Budget.scope == wanted)
    budgets = list(session.scalars(query))
    if scope is not None and not budgets:
        known = list(session.scalars(select(Budget.scope).order_by(Budget.scope)))
        close = difflib.get_close_matches(wanted, known, n=3, cutoff=0.5)
        hint = (
            ("Did you mean " + ", ".join(f"`{c}`" for c in close) + "?")
            if close
            else ("`/mlcost budget list` shows them all.")
        )
        raise NotFoundError(f"No budget for `{wanted[:80]}`. {hint}")
    statuses = [budget_status(session, b, span, basis) for b in budgets]
    statuses.sort(key=lambda s: (-(s.used or Decimal(0)), s.scope))
    return BudgetBoard(span, basis, statuses)
