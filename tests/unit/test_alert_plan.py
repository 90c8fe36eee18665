"""Which budget alerts are due: highest threshold only, once; forecasts; silences."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from bot.budgets.evaluate import BudgetStatus
from bot.budgets.plan import (
    BudgetAlert,
    Silence,
    budget_alert_key,
    budget_alert_revision,
    parse_budget_alert_key,
    plan_budget_alerts,
    sent_by_scope,
)
from bot.periods import month_period
from bot.spend.forecast import BudgetForecast

NOW = dt.datetime(2026, 11, 21, 6, tzinfo=dt.UTC)


def status(
    spent: str,
    forecast: str | None = None,
    thresholds: tuple[int, ...] = (50, 80, 100),
    amount: str = "1000",
) -> BudgetStatus:
    return BudgetStatus(
        budget_id=1,
        scope="model:recsys",
        model_name="recsys",
        team_name=None,
        stage=None,
        amount=Decimal(amount),
        thresholds=thresholds,
        forecast_enabled=True,
        forecast_threshold=100,
        month=month_period("2026-11"),
        as_of=dt.date(2026, 11, 20),
        month_to_date=Decimal(spent),
        forecast=BudgetForecast(Decimal(forecast), "run-rate", 20) if forecast else None,
    )


def keys(alerts: list[BudgetAlert]) -> list[str]:
    return [a.dedupe_key for a in alerts]


def test_only_the_highest_crossed_threshold_is_posted_and_only_once() -> None:
    alerts = plan_budget_alerts(status("850"), sent=set(), silence=None, now=NOW)
    assert keys(alerts) == ["budget:model:recsys:2026-11:actual:80"]
    assert plan_budget_alerts(status("850"), sent={("actual", 80)}, silence=None, now=NOW) == []
    later = plan_budget_alerts(status("1000"), sent={("actual", 80)}, silence=None, now=NOW)
    assert keys(later) == ["budget:model:recsys:2026-11:actual:100"]
    assert plan_budget_alerts(status("499.99"), sent=set(), silence=None, now=NOW) == []


def test_forecast_alert_once_and_not_when_actual_already_crossed() -> None:
    alerts = plan_budget_alerts(status("400", "1200"), sent=set(), silence=None, now=NOW)
    assert keys(alerts) == ["budget:model:recsys:2026-11:forecast:100"]
    assert (
        plan_budget_alerts(status("400", "1300"), sent={("forecast", 100)}, silence=None, now=NOW)
        == []
    )
    over = plan_budget_alerts(status("1100", "1500"), sent=set(), silence=None, now=NOW)
    assert keys(over) == ["budget:model:recsys:2026-11:actual:100"]
    assert plan_budget_alerts(status("400", None), sent=set(), silence=None, now=NOW) == []


def test_snooze_silences_everything_until_it_ends() -> None:
    snooze = Silence(snoozed_until=NOW + dt.timedelta(days=1), snoozed_by="U1")
    assert plan_budget_alerts(status("1100"), sent=set(), silence=snooze, now=NOW) == []
    after = NOW + dt.timedelta(days=2)
    assert keys(plan_budget_alerts(status("1100"), sent=set(), silence=snooze, now=after)) == [
        "budget:model:recsys:2026-11:actual:100"
    ]


def test_acknowledge_silences_the_month_except_being_exceeded() -> None:
    ack = Silence(acknowledged_by="U1")
    assert (
        plan_budget_alerts(status("850", "1200"), sent={("actual", 50)}, silence=ack, now=NOW) == []
    )
    exceeded = plan_budget_alerts(status("1000"), sent={("actual", 80)}, silence=ack, now=NOW)
    assert keys(exceeded) == ["budget:model:recsys:2026-11:actual:100"]


def test_zero_budget_alerts_on_any_spend() -> None:
    alerts = plan_budget_alerts(status("0.01", amount="0"), sent=set(), silence=None, now=NOW)
    assert keys(alerts) == ["budget:model:recsys:2026-11:actual:100"]


def test_keys_round_trip_even_for_scopes_with_colons_and_slashes() -> None:
    key = "budget:model:fc-2026-11/stage:training:2026-11:forecast:100"
    assert parse_budget_alert_key(key) == (
        "model:fc-2026-11/stage:training",
        "2026-11",
        "forecast",
        100,
    )
    assert parse_budget_alert_key("anomaly:spend:model:x:2026-11-10") is None
    assert sent_by_scope([key]) == {"model:fc-2026-11/stage:training": {("forecast", 100)}}


def test_a_changed_amount_names_its_revision_and_only_its_keys_count_as_sent() -> None:
    old = "budget:model:fc-2026-11/stage:training:2026-11:actual:80"
    new = "budget:model:fc-2026-11/stage:training:2026-11:actual:100:r2"
    assert (
        budget_alert_key("model:x", "2026-11", "actual", 80) == "budget:model:x:2026-11:actual:80"
    )
    assert budget_alert_key("model:x", "2026-11", "actual", 80, 2) == (
        "budget:model:x:2026-11:actual:80:r2"
    )
    assert parse_budget_alert_key(new) == (
        "model:fc-2026-11/stage:training",
        "2026-11",
        "actual",
        100,
    )
    assert budget_alert_revision(new) == 2 and budget_alert_revision(old) == 0
    scope = "model:fc-2026-11/stage:training"
    assert sent_by_scope([old, new]) == {scope: {("actual", 80)}}
    assert sent_by_scope([old, new], {scope: 2}) == {scope: {("actual", 100)}}
    assert sent_by_scope([old, new], {scope: 1}) == {}
