"""Daily spend series from the ledger, and the reporting window they are read for."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend
from bot.errors import UsageError
from bot.money import CostBasis, format_money
from bot.periods import Period, day_words, days_words, month_of, parse_window, previous_month
from bot.registry.spec import parse_scope
from bot.slack.charts.spend_chart import SpendChart
from bot.spend.coverage import forecast_covered_days
from bot.spend.forecast import LOOKBACK_DAYS, Forecast
from bot.spend.reports import cost_column, display_currency

DEFAULT_WINDOW = "30d"


@dataclass(frozen=True)
class ReportingWindow:
    """What a report covers: the chart window, the budget month and the last day of data."""

    window: Period
    month: Period
    as_of: dt.date  # last day counted as actual; month.start - 1 day when there is none yet
    data_through: dt.date | None

    @property
    def previous_month(self) -> Period:
        """Return the month before the budget month."""
        return previous_month(self.month)

    @property
    def month_complete(self) -> bool:
        """Return whether every day of the month is in the past."""
        return self.as_of >= self.month.end - dt.timedelta(days=1)

    def same_days_last_month(self) -> Period:
        """Return the previous month's first N days, N being the days counted this month."""
        prev = self.previous_month
        counted = max(0, (self.as_of - self.month.start).days + 1)
        end = min(prev.end, prev.start + dt.timedelta(days=counted))
        return Period(prev.start, end, f"{prev.label} days 1–{(end - prev.start).days}")

    def query_start(self) -> dt.date:
        """Return the first day any part of a report needs (window, history, last month)."""
        return min(
            self.window.start,
            self.previous_month.start,
            self.as_of - dt.timedelta(days=LOOKBACK_DAYS),
        )

    def query_end(self) -> dt.date:
        """Return the day after the last day any part of a report needs."""
        return max(self.window.end, self.month.end)

    def query_period(self) -> Period:
        """Return every day any part of a report reads, labelled by the window."""
        return Period(self.query_start(), self.query_end(), self.window.label)


def data_through(session: Session, today: dt.date) -> dt.date | None:
    """Return the last day on or before today that the ledger has spend for."""
    day = session.scalar(select(func.max(DailySpend.day)).where(DailySpend.day <= today))
    return day if isinstance(day, dt.date) else None


def reporting_window(session: Session, today: dt.date, window_text: str | None) -> ReportingWindow:
    """Resolve `30d`, `90d` or `YYYY-MM` (default 30d) against what the ledger holds."""
    through = data_through(session, today)
    anchor = through or today
    window = parse_window(window_text or DEFAULT_WINDOW, anchor)
    if window.start > today:
        raise UsageError(f"{window.label} has not started yet; pick a month up to {today:%Y-%m}")
    is_month = re.fullmatch(r"\d{4}-\d{2}", window.label) is not None
    month = window if is_month else month_of(anchor)
    last = month.end - dt.timedelta(days=1)
    as_of = min(through, last) if through is not None else month.start - dt.timedelta(days=1)
    as_of = max(as_of, month.start - dt.timedelta(days=1))
    if window.end > month.end or window.end <= month.start:
        window = Period(window.start, min(window.end, month.end), window.label)
    return ReportingWindow(window=window, month=month, as_of=as_of, data_through=through)


def scope_filters(scope: str) -> list[Any]:
    """Return the ledger conditions selecting a budget scope's spend."""
    model, team, stage = parse_scope(scope)
    conditions: list[Any] = []
    if model is not None:
        conditions.append(DailySpend.model == model)
    if team is not None:
        conditions.append(DailySpend.team == team)
    if stage is not None:
        conditions.append(DailySpend.stage == stage)
    return conditions


def daily_totals(
    session: Session,
    *,
    where: Sequence[Any],
    start: dt.date,
    end: dt.date,
    basis: CostBasis = CostBasis.BILLED,
) -> dict[dt.date, Decimal]:
    """Return spend per day in [start, end) for rows matching the conditions."""
    cost = cost_column(basis)
    rows = session.execute(
        select(DailySpend.day, func.sum(cost))
        .where(*where, DailySpend.day >= start, DailySpend.day < end)
        .group_by(DailySpend.day)
    )
    return {day: Decimal(total or 0) for day, total in rows}


def in_period(daily: dict[dt.date, Decimal], period: Period) -> Decimal:
    """Sum a daily series over a period."""
    return sum((v for d, v in daily.items() if period.start <= d < period.end), Decimal(0))


def forecast_history(session: Session, span: ReportingWindow, currency: str) -> list[dt.date]:
    """Return the covered days a report's forecast for the window's month reads."""
    return forecast_covered_days(
        session, as_of=span.as_of, period_start=span.month.start, currency=currency
    )


def window_and_currency(
    session: Session,
    *,
    today: dt.date,
    window: str | None,
    currency: str,
    where: Sequence[Any],
    what: str,
) -> tuple[ReportingWindow, str]:
    """Return the reporting window and the one currency of the spend `where` selects in it."""
    span = reporting_window(session, today, window)
    found = display_currency(
        session, setting=currency, period=span.query_period(), where=where, what=what
    )
    return span, found


def chart_subtitle(
    span: ReportingWindow, first_day: dt.date, basis: str, forecast: Forecast
) -> str:
    """Return a spend chart's subtitle: its dates, cost basis, data's last day and forecast."""
    last_day = span.month.end - dt.timedelta(days=1)
    return (
        f"{days_words(first_day, last_day, year=True)} · {basis} · data through "
        f"{day_words(span.as_of)}"
        f" · forecast: {forecast.describe()}"
    )


def forecast_chart(
    *,
    title: str,
    basis: str,
    currency: str,
    stacks: dict[str, dict[dt.date, Decimal]],
    span: ReportingWindow,
    first_day: dt.date,
    month_actual: dict[dt.date, Decimal],
    forecast: Forecast,
    budget: Decimal | None,
) -> SpendChart:
    """Describe a chart of the window's daily spend with the month's burn, budget and forecast."""
    return SpendChart(
        title=title,
        subtitle=chart_subtitle(span, first_day, basis, forecast),
        currency=currency,
        stacks=stacks,
        month_start=span.month.start,
        month_end=span.month.end,
        first_day=first_day,
        month_actual=month_actual,
        projected=forecast.projected,
        budget=budget,
        forecast_label=(
            "" if forecast.amount is None else f"forecast {format_money(forecast.amount, currency)}"
        ),
    )
