"""Spend across models: one team's models ranked, and the biggest and fastest-growing models."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import Budget, DailySpend, MLModel
from bot.money import CostBasis, percent_of
from bot.periods import MONTHLY
from bot.registry.catalog import find_team
from bot.slack.charts.spend_chart import SpendChart
from bot.spend.daily import (
    ReportingWindow,
    forecast_chart,
    forecast_history,
    in_period,
    reporting_window,
    window_and_currency,
)
from bot.spend.forecast import Forecast, forecast_month
from bot.spend.freshness import LedgerFreshness, freshness_line, ledger_freshness
from bot.spend.reports import cost_column, display_currency

ZERO = Decimal(0)
NO_MODEL = "(no model)"
CHART_SERIES = 7
# Growth in percent is noise on tiny amounts; rank growth only above this month-to-date spend.
GROWTH_FLOOR = Decimal(100)


@dataclass
class ModelLine:
    """One model's month so far against the same days of last month."""

    name: str
    month_to_date: Decimal
    last_month_same_days: Decimal
    forecast: Forecast
    budget: Decimal | None = None

    @property
    def change(self) -> Decimal | None:
        """Return the change in percent against the same days last month (None when new)."""
        if self.last_month_same_days <= 0:
            return None
        return percent_of(self.month_to_date - self.last_month_same_days, self.last_month_same_days)

    @property
    def budget_used(self) -> Decimal | None:
        """Return month-to-date as a percentage of the budget."""
        return percent_of(self.month_to_date, self.budget) if self.budget else None


@dataclass
class TeamReport:
    team: str
    owners: list[str]
    channel: str | None
    basis: CostBasis
    span: ReportingWindow
    models: list[ModelLine]
    total: ModelLine
    daily_by_model: dict[str, dict[dt.date, Decimal]]
    currency: str = "USD"
    freshness: LedgerFreshness | None = None  # read when a maximum data age was given

    @property
    def stale_data(self) -> str | None:
        """Return the line saying the ledger is stale, else None."""
        return None if self.freshness is None else freshness_line(self.freshness)


@dataclass
class TopModels:
    span: ReportingWindow
    basis: CostBasis
    biggest: list[ModelLine]
    growing: list[ModelLine]
    total: Decimal
    currency: str = "USD"


def daily_by_model(
    session: Session, span: ReportingWindow, basis: CostBasis, where: Sequence[Any]
) -> dict[str, dict[dt.date, Decimal]]:
    """Return spend per model per day over everything the window needs."""
    cost = cost_column(basis)
    rows = session.execute(
        select(DailySpend.model, DailySpend.day, func.sum(cost))
        .where(*where, DailySpend.day >= span.query_start(), DailySpend.day < span.query_end())
        .group_by(DailySpend.model, DailySpend.day)
    )
    series: dict[str, dict[dt.date, Decimal]] = defaultdict(dict)
    for model, day, total in rows:
        series[model or NO_MODEL][day] = Decimal(total or 0)
    return series


def model_line(
    name: str,
    daily: dict[dt.date, Decimal],
    span: ReportingWindow,
    budget: Decimal | None,
    covered: Sequence[dt.date],
) -> ModelLine:
    """Summarise one model's daily series for the window's month; `covered` holds the days
    its forecast may read (`forecast_history`)."""
    known = {d: v for d, v in daily.items() if d <= span.as_of}
    forecast = forecast_month(known, span.month, span.as_of, covered=covered)
    return ModelLine(
        name, forecast.actual, in_period(daily, span.same_days_last_month()), forecast, budget
    )


def model_budgets(session: Session, currency: str = "USD") -> dict[str, Decimal]:
    """Return every model's whole-model monthly budget in a currency (a budget per day, week
    or quarter is not a month's: the App Home and the budget board show those)."""
    rows = session.execute(
        select(Budget.model_name, Budget.monthly_amount).where(
            Budget.model_name.is_not(None),
            Budget.stage.is_(None),
            Budget.currency == currency,
            Budget.period == MONTHLY,
        )
    )
    return {name: amount for name, amount in rows if name is not None}


def team_report(
    *,
    session: Session,
    name: str,
    today: dt.date,
    window: str | None = None,
    basis: CostBasis = CostBasis.BILLED,
    currency: str = "USD",
    max_data_age_days: int | None = None,
) -> TeamReport:
    """Rank a team's models by month-to-date spend, with the team's total and forecast.

    `currency` is the organisation's; the report is in the team's spend's one currency. With
    `max_data_age_days` the report says whether the ledger is stale on `today`.
    """
    team = find_team(session, name)
    span, currency = window_and_currency(
        session,
        today=today,
        window=window,
        currency=currency,
        where=[DailySpend.team == team.name],
        what=f"team `{team.name}`'s spend",
    )
    series = daily_by_model(session, span, basis, [DailySpend.team == team.name])
    for model_name in session.scalars(select(MLModel.name).where(MLModel.team_id == team.id)):
        series.setdefault(model_name, {})
    budgets = model_budgets(session, currency)
    covered = forecast_history(session, span, currency)
    lines = [
        model_line(model, daily, span, budgets.get(model), covered)
        for model, daily in series.items()
    ]
    lines.sort(key=lambda line: (-line.month_to_date, line.name))
    team_daily: dict[dt.date, Decimal] = defaultdict(lambda: ZERO)
    for daily in series.values():
        for day, value in daily.items():
            team_daily[day] += value
    team_budget = session.scalar(
        select(Budget.monthly_amount).where(
            Budget.team_name == team.name,
            Budget.stage.is_(None),
            Budget.currency == currency,
            Budget.period == MONTHLY,
        )
    )
    return TeamReport(
        team=team.name,
        owners=sorted(o.user_id for o in team.owners),
        channel=team.channel,
        basis=basis,
        span=span,
        models=lines,
        total=model_line(f"team {team.name}", dict(team_daily), span, team_budget, covered),
        daily_by_model=dict(series),
        currency=currency,
        freshness=None
        if max_data_age_days is None
        else ledger_freshness(session=session, today=today, max_age_days=max_data_age_days),
    )


def top_models(
    *,
    session: Session,
    today: dt.date,
    count: int = 10,
    basis: CostBasis = CostBasis.BILLED,
    currency: str = "USD",
) -> TopModels:
    """Return the biggest models this month and the fastest-growing against last month.

    Models are ranked in one currency only: spend billed in several is refused.
    """
    span = reporting_window(session, today, None)
    owned = [DailySpend.model.is_not(None)]
    currency = display_currency(
        session, setting=currency, period=span.query_period(), where=owned, what="Models' spend"
    )
    series = daily_by_model(session, span, basis, owned)
    budgets = model_budgets(session, currency)
    covered = forecast_history(session, span, currency)
    lines = [
        model_line(model, daily, span, budgets.get(model), covered)
        for model, daily in series.items()
    ]
    biggest = sorted(lines, key=lambda line: (-line.month_to_date, line.name))[:count]
    candidates = [
        line
        for line in lines
        if line.month_to_date >= GROWTH_FLOOR and line.month_to_date > line.last_month_same_days
    ]
    growing = sorted(candidates, key=_growth_rank)[:count]
    total = sum((x.month_to_date for x in lines), ZERO)
    return TopModels(span, basis, biggest, growing, total, currency)


def _growth_rank(line: ModelLine) -> tuple[Decimal, str]:
    """New models first, then the largest percentage growth."""
    change = line.change if line.change is not None else Decimal("Infinity")
    return -change, line.name


def team_chart(report: TeamReport, currency: str) -> SpendChart:
    """Describe the team's chart: daily spend stacked by model, the team's burn and forecast."""
    span = report.span
    ranked = [line.name for line in report.models if report.daily_by_model.get(line.name)]
    shown, rest = ranked[: CHART_SERIES - 1], ranked[CHART_SERIES - 1 :]
    stacks: dict[str, dict[dt.date, Decimal]] = {}
    last = min(span.as_of, span.window.end - dt.timedelta(days=1))
    first = min(span.window.start, span.month.start)
    for name in shown + (["other models"] if rest else []):
        stacks[name] = {}
    for name, daily in report.daily_by_model.items():
        label = name if name in shown else "other models"
        if label not in stacks:
            continue
        for day, value in daily.items():
            if first <= day <= last:
                stacks[label][day] = stacks[label].get(day, ZERO) + value
    month_actual: dict[dt.date, Decimal] = defaultdict(lambda: ZERO)
    for daily in report.daily_by_model.values():
        for day, value in daily.items():
            if span.month.start <= day <= span.as_of:
                month_actual[day] += value
    forecast = report.total.forecast
    return forecast_chart(
        title=f"team {report.team} — daily spend by model",
        basis=basis_label(report.basis),
        currency=currency,
        stacks=stacks,
        span=span,
        first_day=first,
        month_actual=dict(month_actual),
        forecast=forecast,
        budget=report.total.budget,
    )


def basis_label(basis: CostBasis) -> str:
    """Return `billed cost` or `effective cost`."""
    return f"{basis} cost"
