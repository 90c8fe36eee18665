"""Budget periods (pure): their days, labels and words, alert keys per period, the forecast to a
period's end, and the registry's `amount:` / `period:`."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from bot.budgets.evaluate import BudgetStatus
from bot.budgets.messages import AlertContext
from bot.budgets.plan import (
    BudgetAlert,
    budget_alert_key,
    parse_budget_alert_key,
    plan_budget_alerts,
    sent_by_scope,
)
from bot.errors import RegistryError, UsageError
from bot.periods import (
    budget_period,
    check_budget_period,
    per_suffix,
    period_kind_of_label,
    period_words,
)
from bot.registry.plan import diff_registry
from bot.registry.spec import parse_registry, registry_to_yaml
from bot.slack.blocks.alerts import acknowledged_note, build_budget_alert, build_raise_modal
from bot.spend.forecast import SpendSummary, forecast_month_end, min_days_known

NOW = dt.datetime(2026, 11, 30, 8, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("kind", "day", "start", "end", "label", "words"),
    [
        ("daily", "2026-11-18", "2026-11-18", "2026-11-19", "d2026-11-18", "Nov 18, 2026"),
        # ISO weeks: Monday to Sunday, across a month and a year
        ("weekly", "2026-11-18", "2026-11-16", "2026-11-23", "w2026-11-16", "week of Nov 16, 2026"),
        ("weekly", "2026-11-22", "2026-11-16", "2026-11-23", "w2026-11-16", "week of Nov 16, 2026"),
        ("weekly", "2026-11-23", "2026-11-23", "2026-11-30", "w2026-11-23", "week of Nov 23, 2026"),
        ("weekly", "2027-01-01", "2026-12-28", "2027-01-04", "w2026-12-28", "week of Dec 28, 2026"),
        ("monthly", "2026-11-18", "2026-11-01", "2026-12-01", "2026-11", "2026-11"),
        ("quarterly", "2026-11-18", "2026-10-01", "2027-01-01", "q2026-10-01", "2026-Q4"),
        ("quarterly", "2027-03-31", "2027-01-01", "2027-04-01", "q2027-01-01", "2027-Q1"),
        ("quarterly", "2027-04-01", "2027-04-01", "2027-07-01", "q2027-04-01", "2027-Q2"),
    ],
)
def test_each_period_has_its_days_label_and_words(
    kind: str, day: str, start: str, end: str, label: str, words: str
) -> None:
    period = budget_period(kind, dt.date.fromisoformat(day))
    assert (period.start, period.end) == (dt.date.fromisoformat(start), dt.date.fromisoformat(end))
    assert period.label == label
    assert period_words(label) == words
    assert period_kind_of_label(label) == kind
    if kind == "weekly":
        assert period.start.weekday() == 0 and period.days == 7


def test_an_unknown_period_is_refused_by_name() -> None:
    assert check_budget_period(" Weekly ") == "weekly"
    with pytest.raises(UsageError, match="'fortnightly' is not a budget period; use daily, weekly"):
        check_budget_period("fortnightly")
    assert per_suffix("monthly") == "" and per_suffix("quarterly") == " / quarter"


def status(
    kind: str, as_of: dt.date, spent: str, amount: str = "1000", revision: int = 0
) -> BudgetStatus:
    return BudgetStatus(
        budget_id=1,
        scope="model:alpha",
        model_name="alpha",
        team_name=None,
        stage=None,
        amount=Decimal(amount),
        thresholds=(80, 100),
        forecast_enabled=False,
        forecast_threshold=100,
        month=budget_period(kind, as_of),
        as_of=as_of,
        month_to_date=Decimal(spent),
        forecast=None,
        revision=revision,
        period_kind=kind,
    )


def keys(alerts: list[BudgetAlert]) -> list[str]:
    return [a.dedupe_key for a in alerts]


def test_a_weekly_threshold_alerts_once_a_week_and_again_the_next_week() -> None:
    """Polled twice in a week, across the Sunday/Monday boundary, and after a budget change."""
    recorded: list[str] = []

    def poll(s: BudgetStatus) -> list[str]:
        periods = {s.scope: s.month.label}
        sent = sent_by_scope(recorded, {s.scope: s.revision}, periods).get(s.scope, set())
        due = keys(plan_budget_alerts(s, sent=sent, silence=None, now=NOW))
        recorded.extend(due)
        return due

    tue, wed, sun = dt.date(2026, 11, 17), dt.date(2026, 11, 18), dt.date(2026, 11, 22)
    assert poll(status("weekly", tue, "850")) == ["budget:model:alpha:w2026-11-16:actual:80"]
    assert poll(status("weekly", tue, "850")) == []  # the same poll again
    assert poll(status("weekly", wed, "900")) == []  # later the same week, same threshold
    assert poll(status("weekly", sun, "1000")) == ["budget:model:alpha:w2026-11-16:actual:100"]
    monday = dt.date(2026, 11, 23)
    assert poll(status("weekly", monday, "0")) == []
    assert poll(status("weekly", monday, "820")) == ["budget:model:alpha:w2026-11-23:actual:80"]
    # a changed amount (revision 1) is news within the week, once
    raised = status("weekly", dt.date(2026, 11, 24), "1700", amount="2000", revision=1)
    assert poll(raised) == ["budget:model:alpha:w2026-11-23:actual:80:r1"]
    assert poll(raised) == []


def test_keys_of_another_period_do_not_count_as_sent() -> None:
    weekly = budget_alert_key("model:alpha", "w2026-11-16", "actual", 80)
    monthly = budget_alert_key("model:alpha", "2026-11", "actual", 100)
    assert parse_budget_alert_key(weekly) == ("model:alpha", "w2026-11-16", "actual", 80)
    assert parse_budget_alert_key("budget:model:alpha:x2026-11-16:actual:80") is None
    assert sent_by_scope([weekly, monthly], periods={"model:alpha": "w2026-11-16"}) == {
        "model:alpha": {("actual", 80)}
    }
    assert sent_by_scope([weekly, monthly], periods={"model:alpha": "w2026-11-23"}) == {}


def covered_from(first: dt.date, as_of: dt.date) -> tuple[dt.date, ...]:
    """Return every day from first through as_of: a ledger without gaps."""
    return tuple(first + dt.timedelta(days=i) for i in range((as_of - first).days + 1))


def test_the_forecast_runs_to_the_end_of_the_week_or_quarter() -> None:
    """With under two weeks of history the projection is the flat run-rate of the last days."""
    as_of = dt.date(2026, 11, 18)  # a Wednesday: 4 days of the week to go
    covered = covered_from(dt.date(2026, 11, 12), as_of)  # 7 days of history
    week = budget_period("weekly", as_of)
    summary = SpendSummary(
        as_of=as_of,
        covered=covered,
        month_to_date=Decimal("300"),  # Mon to Wed
        last_7_days=Decimal("700"),
        weekday_totals=(Decimal(100),) * 7,
        period=week,
    )
    forecast = forecast_month_end(summary)
    assert forecast is not None
    assert forecast.amount == Decimal("300") + Decimal("700") / 7 * 4
    quarter = budget_period("quarterly", as_of)
    to_go = (quarter.end - as_of).days - 1  # Nov 19 .. Dec 31
    forecast = forecast_month_end(
        SpendSummary(as_of, covered, Decimal("300"), Decimal("700"), (Decimal(100),) * 7, quarter)
    )
    assert forecast is not None and forecast.amount == Decimal(300 + 100 * to_go)


def test_when_a_period_is_first_forecast() -> None:
    assert min_days_known(budget_period("monthly", dt.date(2026, 11, 2))) == 5
    assert min_days_known(budget_period("quarterly", dt.date(2026, 11, 2))) == 5
    assert min_days_known(budget_period("weekly", dt.date(2026, 11, 2))) == 2
    day = budget_period("daily", dt.date(2026, 11, 2))
    summary = SpendSummary(
        day.start, covered_from(dt.date(2026, 10, 1), day.start), Decimal(5), Decimal(35), (), day
    )
    assert forecast_month_end(summary) is None  # a day is complete when it is checked
    monday = budget_period("weekly", dt.date(2026, 11, 16))
    first = SpendSummary(
        monday.start,
        covered_from(dt.date(2026, 10, 1), monday.start),
        Decimal(5),
        Decimal(35),
        (),
        monday,
    )
    assert forecast_month_end(first) is None  # one day of the week known


REGISTRY = """\
teams:
  - {name: ranking, owners: [U0AAA111]}
models:
  - {name: alpha, team: ranking}
budgets:
  - {scope: "model:alpha", monthly: 12000}
  - {scope: "model:alpha/stage:training", amount: 2500.5, period: weekly, thresholds: [100]}
  - {scope: "team:ranking", amount: 90000, period: quarterly}
  - {scope: "stage:storage", amount: 40, period: %s}
"""


def test_the_registry_takes_an_amount_per_period_and_writes_it_back() -> None:
    spec = parse_registry(REGISTRY % "daily")
    periods = [(b.scope, b.per_period, b.period) for b in spec.budgets]
    assert periods == [
        ("model:alpha", Decimal(12000), "monthly"),
        ("model:alpha/stage:training", Decimal("2500.5"), "weekly"),
        ("team:ranking", Decimal(90000), "quarterly"),
        ("stage:storage", Decimal(40), "daily"),
    ]
    text = registry_to_yaml(spec)
    assert "monthly: 12000\n" in text and "period: monthly" not in text
    assert "amount: 2500.5\n  period: weekly\n" in text
    again = parse_registry(text)
    assert [(b.scope, b.per_period, b.period) for b in again.budgets] == periods


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        (
            '{scope: "model:alpha", amount: 5, period: fortnightly}',
            "registry:6: budgets.0.period: 'fortnightly' is not a budget period; use daily, "
            "weekly, monthly or quarterly",
        ),
        (
            '{scope: "model:alpha", monthly: 5, period: weekly}',
            "`monthly:` is the amount of a monthly budget; a weekly budget gives `amount:`",
        ),
        ('{scope: "model:alpha", monthly: 5, amount: 5}', "give `monthly:` or `amount:`, not both"),
        ('{scope: "model:alpha", period: weekly}', "give the budget's amount"),
        ('{scope: "model:alpha", amount: -5, period: weekly}', "budgets.0.amount:"),
    ],
)
def test_a_bad_budget_period_or_amount_is_named(budget: str, message: str) -> None:
    text = (
        "teams:\n  - {name: ranking}\nmodels:\n  - {name: alpha, team: ranking}\nbudgets:\n"
        f"  - {budget}\n"
    )
    with pytest.raises(RegistryError) as raised:
        parse_registry(text)
    assert message in str(raised.value)


def test_alerts_say_the_period_its_unit_and_what_was_spent_in_it() -> None:
    wed = dt.date(2026, 11, 18)
    weekly = status("weekly", wed, "850")
    text, blocks = build_budget_alert(BudgetAlert(weekly, "actual", 80), AlertContext("C0X"))
    assert text == (
        ":warning: model:alpha passed 80 % of its weekly budget (week of Nov 16, 2026): "
        "$850 of $1,000 / week (85 %)."
    )
    body = blocks[1]["text"]["text"]
    assert (
        "*$850* spent in the week of Nov 16, 2026 through Nov 18 of a *$1,000 / week* budget"
        in body
    )
    assert "No forecast yet: only 3 days of this week are known." in body
    # the buttons carry the alert's outbox key only; the handlers read its period from the outbox
    assert json.loads(blocks[-1]["elements"][0]["value"]) == {
        "key": "budget:model:alpha:w2026-11-16:actual:80"
    }
    daily = status("daily", wed, "1200")
    text, blocks = build_budget_alert(BudgetAlert(daily, "actual", 100), AlertContext("C0X"))
    assert text.startswith(":red_circle: model:alpha is over its daily budget (Nov 18, 2026)")
    assert "*$1,200* spent on Wed Nov 18 of a *$1,000 / day* budget" in blocks[1]["text"]["text"]
    assert "No forecast for a daily budget" in blocks[1]["text"]["text"]
    monthly = status("monthly", wed, "850")
    text, _ = build_budget_alert(BudgetAlert(monthly, "actual", 80), AlertContext("C0X"))
    assert text == ":warning: model:alpha passed 80 % of its 2026-11 budget: $850 of $1,000 (85 %)."
    note = acknowledged_note("U1", NOW, "model:alpha", "q2026-10-01")
    assert "no more alerts for `model:alpha` in 2026-Q4 unless it is exceeded" in note
    modal = build_raise_modal(
        "model:alpha",
        "w2026-11-16",
        Decimal(1000),
        "USD",
        "budget:model:alpha:w2026-11-16:actual:80",
    )
    assert modal["blocks"][1]["label"]["text"] == "New weekly budget"


def test_an_import_that_changes_the_period_says_so_in_one_line() -> None:
    base = (
        "teams:\n  - {name: ranking}\nmodels:\n  - {name: alpha, team: ranking}\nbudgets:\n"
        '  - {scope: "model:alpha", %s}\n'
    )
    was = parse_registry(base % "monthly: 12000")
    diff = diff_registry(was, parse_registry(base % "amount: 500, period: weekly"))
    assert diff.lines() == ["update budget model:alpha: amount $12,000 / month -> $500 / week"]
    diff = diff_registry(was, parse_registry(base % "monthly: 15000"))
    assert diff.lines() == ["update budget model:alpha: monthly $12,000 -> $15,000"]
