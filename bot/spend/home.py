"""The App Home dashboard: the models a user owns, this month, and their open resource findings."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from bot.budgets.evaluate import BudgetStatus, evaluate_budgets
from bot.db.schema import Budget, DailySpend, MLModel, Team
from bot.money import CostBasis
from bot.periods import MONTHLY
from bot.registry.catalog import is_admin, model_owner_ids
from bot.spend.daily import ReportingWindow, forecast_history, reporting_window
from bot.spend.reports import display_currency
from bot.spend.team_report import ModelLine, daily_by_model, model_budgets, model_line
from bot.waste.findings import ResourceEntry, resource_entries


@dataclass
class HomeDashboard:
    user_id: str
    span: ReportingWindow
    models: list[ModelLine]
    admin: bool
    currency: str = "USD"
    # the user's models' open resource findings (Keep / Not waste ones apart), costliest first
    waste: list[ResourceEntry] = field(default_factory=list)
    # the user's models' budgets per day, week or quarter, each in its current period
    period_budgets: list[BudgetStatus] = field(default_factory=list)


def owned_models(session: Session, user_id: str) -> list[str]:
    """Return the names of the models the user owns (directly, or as owner of an unowned team)."""
    models = session.scalars(
        select(MLModel).options(
            selectinload(MLModel.owners), selectinload(MLModel.team).selectinload(Team.owners)
        )
    )
    return sorted(m.name for m in models if user_id in model_owner_ids(m))


def home_dashboard(
    *,
    session: Session,
    user_id: str,
    today: dt.date,
    currency: str = "USD",
    now: dt.datetime | None = None,
) -> HomeDashboard:
    """Summarise each model the user owns: month to date, budget used, forecast; and the open
    resource findings on those models with their monthly cost.

    In one currency (`currency` is the organisation's): spend billed in several is refused.
    """
    span = reporting_window(session, today, None)
    names = owned_models(session, user_id)
    lines: list[ModelLine] = []
    owned = [DailySpend.model.in_(names)]
    currency = display_currency(
        session,
        setting=currency,
        period=span.query_period(),
        where=owned,
        what="Your models' spend",
    )
    if names:
        series = daily_by_model(session, span, CostBasis.BILLED, owned)
        budgets = model_budgets(session, currency)
        covered = forecast_history(session, span, currency)
        lines = [model_line(n, series.get(n, {}), span, budgets.get(n), covered) for n in names]
        lines.sort(key=lambda line: (-line.month_to_date, line.name))
    waste: list[ResourceEntry] = []
    if names:
        when = now or dt.datetime.combine(today, dt.time(), dt.UTC)
        waste = resource_entries(session=session, now=when, currency=currency, models=names)
    admin = is_admin(session, user_id)
    board = HomeDashboard(user_id, span, lines, admin, currency, waste)
    board.period_budgets = period_budgets(session, names, span.as_of, currency)
    return board


def period_budgets(
    session: Session, models: list[str], as_of: dt.date, currency: str
) -> list[BudgetStatus]:
    """Return the models' budgets per day, week or quarter in the currency, as of a day."""
    scopes = list(
        session.scalars(
            select(Budget.scope).where(
                Budget.model_name.in_(models),
                Budget.period != MONTHLY,
                Budget.currency == currency,
            )
        )
    )
    if not scopes:
        return []
    return evaluate_budgets(session=session, as_of=as_of, scopes=scopes)
