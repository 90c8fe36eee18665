"""The model and team charts say which dates they draw, in one form (issue 23, item 12)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.orm import Session

from bot.registry.spec import parse_registry
from bot.registry.sync import import_registry
from bot.spend.model_report import model_chart, model_report
from bot.spend.team_report import team_chart, team_report
from tests.support.alert_walk import ALERT_REGISTRY, add_spend, days, spend_row


def test_the_team_chart_carries_its_date_range_like_the_model_chart(session: Session) -> None:
    import_registry(parse_registry(ALERT_REGISTRY), session=session, actor="test")
    add_spend(
        session,
        [
            spend_row(day, "alpha", "training", "ranking", "100")
            for day in days(dt.date(2026, 10, 1), dt.date(2026, 11, 21))
        ],
    )
    session.flush()
    today = dt.date(2026, 11, 20)
    model = model_chart(model_report(session=session, name="alpha", today=today), "USD")
    team = team_chart(team_report(session=session, name="ranking", today=today), "USD")
    for chart in (model, team):
        dates, basis, through, forecast = chart.subtitle.split(" · ")
        assert dates == f"{chart.first_day:%b} {chart.first_day.day}–Nov 30, 2026", chart.subtitle
        assert (basis, through) == ("billed cost", "data through Nov 20")
        assert forecast.startswith("forecast: ")
    assert model.subtitle == team.subtitle  # one model, one team: the same window and forecast
