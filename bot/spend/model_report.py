"""One model's spend: month-to-date, budget, forecast, stages, GPU-hours, top resources."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import Budget, DailySpend
from bot.db.tables import STAGES
from bot.money import CostBasis, percent_of
from bot.periods import MONTHLY
from bot.registry.catalog import find_model, model_owner_ids
from bot.slack.charts.spend_chart import SpendChart
from bot.spend.daily import (
    ReportingWindow,
    forecast_chart,
    forecast_history,
    in_period,
    window_and_currency,
)
from bot.spend.forecast import Forecast, forecast_month
from bot.spend.freshness import LedgerFreshness, freshness_line, ledger_freshness
from bot.spend.reports import cost_column
from bot.spend.runs import RunCost, model_top_runs

ZERO = Decimal(0)
TOP_RESOURCES = 5


@dataclass(frozen=True)
class ResourceCost:
    resource: str
    service: str
    stage: str
    cost: Decimal


@dataclass
class ModelReport:
    """Everything `/mlcost model` shows; money is Decimal."""

    model: str
    team: str
    owners: list[str]
    channel: str | None
    basis: CostBasis
    span: ReportingWindow
    daily_by_stage: dict[dt.date, dict[str, Decimal]]
    month_to_date: Decimal
    by_stage: list[tuple[str, Decimal]]
    gpu_hours: Decimal
    top_resources: list[ResourceCost]
    forecast: Forecast
    budget: Decimal | None
    last_month_same_days: Decimal
    last_month_total: Decimal
    stage_budgets: dict[str, Decimal] = field(default_factory=dict)
    currency: str = "USD"  # the spend's one currency; budgets in others are not compared
    top_runs: list[RunCost] = field(default_factory=list)  # the month's most expensive runs
    freshness: LedgerFreshness | None = None  # read when a maximum data age was given

    @property
    def stale_data(self) -> str | None:
        """Return the line saying the ledger is stale, else None."""
        return None if self.freshness is None else freshness_line(self.freshness)

    @property
    def budget_used(self) -> Decimal | None:
        """Return month-to-date as a percentage of the budget."""
        return percent_of(self.month_to_date, self.budget) if self.budget else None

    @property
    def forecast_used(self) -> Decimal | None:
        """Return the forecast as a percentage of the budget."""
        amount = self.forecast.amount
        return percent_of(amount, self.budget) if self.budget and amount is not None else None

    @property
    def change_vs_last_month(self) -> Decimal | None:
        """Return the change against the same days of last month, in percent."""
        if self.last_month_same_days == 0:
            return None
        return percent_of(self.month_to_date - self.last_month_same_days, self.last_month_same_days)

    def daily_totals(self) -> dict[dt.date, Decimal]:
        """Return spend per day over every stage."""
        return {day: sum(stages.values(), ZERO) for day, stages in self.daily_by_stage.items()}


def model_report(
    *,
    session: Session,
    name: str,
    today: dt.date,
    window: str | None = None,
    basis: CostBasis = CostBasis.BILLED,
    currency: str = "USD",
    max_data_age_days: int | None = None,
) -> ModelReport:
    """Build the report for a model; NotFoundError names the closest models.

    `currency` is the organisation's (MLCOST_CURRENCY); the report is in its spend's one
    currency, and refuses spend billed in several (CurrencyError). With `max_data_age_days`
    the report says whether the ledger is stale on `today`.
    """
    model = find_model(session, name)
    span, currency = window_and_currency(
        session,
        today=today,
        window=window,
        currency=currency,
        where=[DailySpend.model == model.name],
        what=f"`{model.name}`'s spend",
    )
    by_day, gpu_hours = _daily_by_stage(session, model.name, span, basis)
    as_of = span.as_of
    daily = {day: sum(stages.values(), ZERO) for day, stages in by_day.items()}
    known = {day: v for day, v in daily.items() if day <= as_of}
    stage_totals = _month_by_stage(by_day, span)
    month_to_date = sum(stage_totals.values(), ZERO)
    budgets = _budgets_by_stage(session, model.name, currency)
    shown = {
        day: stages
        for day, stages in by_day.items()
        if span.window.start <= day <= as_of and day < span.window.end
    }
    return ModelReport(
        model=model.name,
        team=model.team.name,
        owners=sorted(model_owner_ids(model)),
        channel=model.effective_channel,
        basis=basis,
        span=span,
        daily_by_stage=dict(sorted(shown.items())),
        month_to_date=month_to_date,
        by_stage=sorted(stage_totals.items(), key=lambda kv: kv[1], reverse=True),
        gpu_hours=gpu_hours,
        top_resources=_top_resources(session, model.name, span, basis),
        forecast=forecast_month(
            known, span.month, as_of, covered=forecast_history(session, span, currency)
        ),
        budget=budgets.get(None),
        last_month_same_days=in_period(daily, span.same_days_last_month()),
        last_month_total=in_period(daily, span.previous_month),
        stage_budgets={stage: amount for stage, amount in budgets.items() if stage},
        currency=currency,
        top_runs=model_top_runs(
            session=session,
            model=model.name,
            start=span.month.start,
            end=span.as_of + dt.timedelta(days=1),
            basis=basis,
        ),
        freshness=None
        if max_data_age_days is None
        else ledger_freshness(session=session, today=today, max_age_days=max_data_age_days),
    )


def _month_by_stage(
    by_day: dict[dt.date, dict[str, Decimal]], span: ReportingWindow
) -> dict[str, Decimal]:
    """Return the month's spend so far per stage."""
    stage_totals: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for day, stages in by_day.items():
        if span.month.start <= day <= span.as_of:
            for stage, value in stages.items():
                stage_totals[stage] += value
    return stage_totals


def _budgets_by_stage(session: Session, model: str, currency: str) -> dict[str | None, Decimal]:
    """Return the model's monthly budgets in the currency by stage (None: the whole model's)."""
    return {
        b.stage: b.monthly_amount
        for b in session.scalars(
            select(Budget).where(
                Budget.model_name == model, Budget.currency == currency, Budget.period == MONTHLY
            )
        )
    }


def _daily_by_stage(
    session: Session, model_name: str, span: ReportingWindow, basis: CostBasis
) -> tuple[dict[dt.date, dict[str, Decimal]], Decimal]:
    """Return the model's cost per day and stage over the span, and its GPU-hours this month."""
    cost = cost_column(basis)
    start, end = span.query_start(), span.query_end()
    rows = session.execute(
        select(DailySpend.day, DailySpend.stage, func.sum(cost), func.sum(DailySpend.gpu_hours))
        .where(DailySpend.model == model_name, DailySpend.day >= start, DailySpend.day < end)
        .group_by(DailySpend.day, DailySpend.stage)
    )
    by_day: dict[dt.date, dict[str, Decimal]] = defaultdict(dict)
    gpu_hours = ZERO
    for day, stage, total, gpu in rows:
        by_day[day][stage] = Decimal(total or 0)
        if span.month.start <= day <= span.as_of:
            gpu_hours += Decimal(gpu or 0)
    return by_day, gpu_hours


def _top_resources(
    session: Session, model: str, span: ReportingWindow, basis: CostBasis
) -> list[ResourceCost]:
    cost = cost_column(basis)
    rows = session.execute(
        select(
            DailySpend.resource_id,
            DailySpend.service,
            DailySpend.stage,
            func.sum(cost).label("cost"),
        )
        .where(
            DailySpend.model == model,
            DailySpend.day >= span.month.start,
            DailySpend.day <= span.as_of,
        )
        .group_by(DailySpend.resource_id, DailySpend.service, DailySpend.stage)
        .order_by(func.sum(cost).desc())
        .limit(TOP_RESOURCES)
    )
    return [
        ResourceCost(resource or "(no resource id)", service, stage, Decimal(total or 0))
        for resource, service, stage, total in rows
    ]


def model_chart(report: ModelReport, currency: str) -> SpendChart:
    """Describe the model's chart: daily spend by stage, burn, budget and forecast."""
    span = report.span
    stacks: dict[str, dict[dt.date, Decimal]] = {stage: {} for stage in STAGES}
    for day, stages in report.daily_by_stage.items():
        for stage, value in stages.items():
            stacks.setdefault(stage, {})[day] = value
    daily = report.daily_totals()
    month_actual = {d: v for d, v in daily.items() if span.month.start <= d <= span.as_of}
    return forecast_chart(
        title=f"{report.model} — daily spend by stage",
        basis=f"{report.basis} cost",
        currency=currency,
        stacks=stacks,
        span=span,
        first_day=min(span.window.start, span.month.start),
        month_actual=month_actual,
        forecast=report.forecast,
        budget=report.budget,
    )
