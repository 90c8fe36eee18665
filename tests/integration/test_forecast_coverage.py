"""Forecasts and weekly posts from covered days only: a gap in the ledger is unknown, not $0.

A covered day is one on which the ledger holds usage from some source (in the organisation's
currency). One month of 2024, then a new provider's export for November 2026: the 22 months
between are days no source had data for, not a history of zeros to shape a forecast with.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy.orm import Session

from bot.budgets.board import budget_board
from bot.budgets.evaluate import evaluate_budgets
from bot.budgets.messages import AlertContext
from bot.budgets.plan import ACTUAL, FORECAST, plan_budget_alerts
from bot.poll.plan import covered_week
from bot.registry.spec import parse_registry
from bot.registry.sync import import_registry
from bot.slack.blocks.alerts import build_budget_alert
from bot.slack.blocks.budget import build_budget_list_blocks, build_budget_show_blocks
from bot.slack.blocks.home import build_home_view
from bot.slack.blocks.model import build_model_report_blocks
from bot.slack.blocks.team import build_team_report_blocks
from bot.spend.home import home_dashboard
from bot.spend.model_report import model_chart, model_report
from bot.spend.team_report import team_report
from tests.support.alert_walk import ALERT_REGISTRY, add_spend, days, spend_row

NOW = dt.datetime(2026, 11, 20, 9, tzinfo=dt.UTC)
NOT_ENOUGH = "not enough history to forecast"


def seed(session: Session, *spans: tuple[dt.date, dt.date], cost: str = "100") -> None:
    """Import the registry and alpha's training at `cost` a day on each span's days [start, end]."""
    import_registry(parse_registry(ALERT_REGISTRY), session=session, actor="test")
    rows = [
        spend_row(day, "alpha", "training", "ranking", cost)
        for start, end in spans
        for day in days(start, end + dt.timedelta(days=1))
    ]
    add_spend(session, rows)
    session.flush()


JANUARY_2024 = (dt.date(2024, 1, 1), dt.date(2024, 1, 31))


def alpha(session: Session, as_of: dt.date):  # type: ignore[no-untyped-def]
    [status] = evaluate_budgets(session=session, as_of=as_of, scopes=["model:alpha"])
    return status


def test_the_budget_forecast_is_not_shaped_by_days_no_source_covered(session: Session) -> None:
    """$100 every covered day: the forecast for November is $3,000, a flat run-rate (twelve
    covered days of history do not hold two of each weekday), not a pattern of zeros."""
    seed(session, JANUARY_2024, (dt.date(2026, 11, 1), dt.date(2026, 11, 12)))
    status = alpha(session, dt.date(2026, 11, 12))
    assert status.forecast is not None
    assert status.forecast.amount == Decimal("3000.00")
    assert "run-rate of the last 7 days" in status.forecast.method
    assert "28 days" not in status.forecast.method


def test_too_few_covered_days_give_no_forecast_and_no_forecast_alert(session: Session) -> None:
    """Six covered days in the last 28: no number, and no "forecast to pass" alert."""
    seed(session, JANUARY_2024, (dt.date(2026, 11, 1), dt.date(2026, 11, 6)), cost="150")
    status = alpha(session, dt.date(2026, 11, 6))
    assert status.forecast is not None
    assert status.forecast.amount is None
    assert NOT_ENOUGH in status.forecast.method
    assert status.forecast_percent is None
    alerts = plan_budget_alerts(status, sent=set(), silence=None, now=NOW)
    assert all(a.kind != FORECAST for a in alerts)


def test_a_threshold_alert_without_enough_history_says_so(session: Session) -> None:
    seed(session, JANUARY_2024, (dt.date(2026, 11, 1), dt.date(2026, 11, 6)), cost="300")
    status = alpha(session, dt.date(2026, 11, 6))  # $1,800 of $3,000: the 50 % line
    alerts = plan_budget_alerts(status, sent=set(), silence=None, now=NOW)
    assert [(a.kind, a.threshold) for a in alerts] == [(ACTUAL, 50)]
    [alert] = alerts
    ctx = AlertContext(channel="C0ALPHA")
    _text, blocks = build_budget_alert(alert, ctx)
    body = blocks[1]["text"]["text"]
    assert "Forecast for the month: not enough history to forecast" in body
    assert "(6 covered days in the last 28; 7 needed)" in body


def test_the_model_report_projects_from_covered_days_across_a_gap(session: Session) -> None:
    """Oct 1-10 and Nov 3-12 covered, nothing in between: each day to come is the $100 of the
    covered days, not a weekday pattern of 28 days eighteen of which no source saw."""
    seed(
        session,
        (dt.date(2026, 10, 1), dt.date(2026, 10, 10)),
        (dt.date(2026, 11, 3), dt.date(2026, 11, 12)),
    )
    report = model_report(session=session, name="alpha", today=dt.date(2026, 11, 12))
    assert report.forecast.projected
    assert set(report.forecast.projected.values()) == {Decimal(100)}
    assert report.forecast.days_of_data == 10  # covered days of the last 28


def test_the_model_report_and_chart_say_when_history_is_too_short(session: Session) -> None:
    seed(session, JANUARY_2024, (dt.date(2026, 11, 1), dt.date(2026, 11, 5)))
    report = model_report(session=session, name="alpha", today=dt.date(2026, 11, 5))
    assert report.forecast.amount is None and report.forecast.projected == {}
    assert report.forecast_used is None
    text, blocks = build_model_report_blocks(report, "USD")
    assert f"no forecast: {NOT_ENOUGH} (5 covered days in the last 28; 7 needed)" in text
    shown = str(blocks)
    assert NOT_ENOUGH in shown
    chart = model_chart(report, "USD")
    assert NOT_ENOUGH in chart.subtitle and chart.projected == {}


def test_a_week_in_a_gap_is_not_covered(session: Session) -> None:
    """The ledger's first day is in 2024, but Nov 2-4 2026 have no data: the week of Nov 2-8
    is not covered, so no weekly post sums it as if those days cost nothing."""
    seed(session, JANUARY_2024, (dt.date(2026, 11, 5), dt.date(2026, 11, 10)))
    assert covered_week(session, dt.date(2026, 11, 10)) is None
    seed_more = [
        spend_row(d, "alpha", "training", "ranking", "100")
        for d in days(dt.date(2026, 11, 2), dt.date(2026, 11, 5))
    ]
    add_spend(session, seed_more)
    session.flush()
    assert covered_week(session, dt.date(2026, 11, 10)) == (
        dt.date(2026, 11, 2),
        dt.date(2026, 11, 8),
    )


def test_team_budget_board_and_home_say_when_history_is_too_short(session: Session) -> None:
    seed(session, JANUARY_2024, (dt.date(2026, 11, 1), dt.date(2026, 11, 5)))
    today = dt.date(2026, 11, 5)
    no_forecast = "no forecast (not enough history)"
    team = team_report(session=session, name="ranking", today=today)
    assert team.total.forecast.amount is None
    text, blocks = build_team_report_blocks(team, "USD")
    assert no_forecast in text and NOT_ENOUGH in str(blocks)
    board = budget_board(session=session, today=today)
    row = next(r for r in board.statuses if r.scope == "model:alpha")
    assert row.forecast.amount is None and row.forecast_used is None
    _text, blocks = build_budget_list_blocks(board, "USD")
    assert no_forecast in str(blocks)
    text, blocks = build_budget_show_blocks(row, board, "USD")
    assert no_forecast in text and NOT_ENOUGH in str(blocks)
    home = build_home_view(home_dashboard(session=session, user_id="U0AAA111", today=today), "USD")
    assert no_forecast in str(home)
