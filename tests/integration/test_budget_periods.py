"""Budgets per day, week, month and quarter on a real database (SQLite, and PostgreSQL when
MLCOST_TEST_DATABASE_URL names one): sums, forecasts, alerts once per period, silences, the
registry round trip and the audit trail."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from bot.audit.trail import audit_trail, change_line
from bot.budgets.admin import set_budget
from bot.budgets.board import budget_board
from bot.budgets.evaluate import evaluate_budgets
from bot.budgets.silences import acknowledge_budget
from bot.config import Settings
from bot.db.engine import session_scope
from bot.db.schema import AlertSilence, AuditLog, Budget
from bot.poll.cycle import run_cycle
from bot.registry.spec import parse_registry, registry_to_yaml
from bot.registry.sync import export_registry, import_registry
from bot.spend.forecast import forecast_month_end, summarize_daily
from tests.support.alert_walk import add_spend, days, spend_row
from tests.support.database import migrated

REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - {name: alpha, team: ranking, owners: [U0AAA111], channel: C0ALPHA}
  - {name: beta, team: ranking, owners: [U0BBB111]}
budgets:
  - {scope: "model:alpha", amount: 400, period: daily, thresholds: [100], forecast: true}
  - {scope: "model:beta", amount: 2500, period: weekly, thresholds: [80, 100], forecast: true}
  - {scope: "team:ranking", monthly: 12000, thresholds: [50, 80, 100], forecast: true}
  - {scope: "model:alpha/stage:training", amount: 30000, period: quarterly, thresholds: [100],
     forecast: true}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
"""

AS_OF = dt.date(2026, 11, 18)  # a Wednesday in the second month of Q4
FIRST = dt.date(2026, 9, 20)  # history reaches into Q3: its days must not count in Q4
# each budget's first day, written out by hand (not from bot.periods)
STARTS = {
    "model:alpha": dt.date(2026, 11, 18),
    "model:beta": dt.date(2026, 11, 16),
    "team:ranking": dt.date(2026, 11, 1),
    "model:alpha/stage:training": dt.date(2026, 10, 1),
}
ENDS = {  # the day after each period
    "model:alpha": dt.date(2026, 11, 19),
    "model:beta": dt.date(2026, 11, 23),
    "team:ranking": dt.date(2026, 12, 1),
    "model:alpha/stage:training": dt.date(2027, 1, 1),
}


def random_rows(seed: int) -> list[dict]:  # type: ignore[type-arg]
    rng = random.Random(seed)
    rows = []
    for day in days(FIRST, AS_OF + dt.timedelta(days=4)):  # rows after as_of must not count
        for model in ("alpha", "beta", None):
            for stage in ("training", "serving"):
                if rng.random() < 0.8:
                    cost = f"{rng.randint(0, 40_000) / 100:.2f}"
                    team = "ranking" if model else None
                    rows.append(spend_row(day, model, stage, team, cost))
    return rows


def matches(row: dict, scope: str) -> bool:  # type: ignore[type-arg]
    if scope == "team:ranking":
        return bool(row["team"] == "ranking")
    model, _, stage = scope.removeprefix("model:").partition("/stage:")
    return bool(row["model"] == model and (not stage or row["stage"] == stage))


def test_each_period_sums_its_own_days_and_forecasts_to_its_end(session: Session) -> None:
    import_registry(parse_registry(REGISTRY), session=session, actor="test")
    rows = random_rows(14)
    add_spend(session, rows)
    session.flush()
    statuses = {s.scope: s for s in evaluate_budgets(session=session, as_of=AS_OF)}
    assert {s: statuses[s].period_kind for s in statuses} == {
        "model:alpha": "daily",
        "model:beta": "weekly",
        "team:ranking": "monthly",
        "model:alpha/stage:training": "quarterly",
    }
    for scope, start in STARTS.items():
        status = statuses[scope]
        expected = sum(
            (r["billed_cost"] for r in rows if start <= r["day"] <= AS_OF and matches(r, scope)),
            Decimal(0),
        )
        assert status.month_to_date == expected, scope
        assert (status.month.start, status.month.end) == (start, ENDS[scope])
        daily: dict[dt.date, Decimal] = {}
        for row in rows:
            if row["day"] <= AS_OF and matches(row, scope):
                daily[row["day"]] = daily.get(row["day"], Decimal(0)) + row["billed_cost"]
        if scope == "model:alpha":
            assert status.forecast is None  # a daily budget's day is complete when checked
            continue
        reference = summarize_daily(
            daily, as_of=AS_OF, covered={r["day"] for r in rows}, period=status.month
        )
        assert reference.month_to_date == expected
        assert status.forecast == forecast_month_end(reference), scope
        assert status.forecast is not None and status.forecast.amount >= expected
    # the board (/mlcost budget) counts the same days for each budget
    board = budget_board(session=session, today=AS_OF)
    for row in board.statuses:
        assert row.spent == statuses[row.scope].month_to_date, row.scope
        assert row.period is not None and row.period.start == STARTS[row.scope]


def test_the_registry_round_trips_periods_through_the_database(session: Session) -> None:
    import_registry(parse_registry(REGISTRY), session=session, actor="test")
    session.flush()
    stored = {b.scope: (b.period, b.monthly_amount) for b in session.scalars(select(Budget))}
    assert stored["model:beta"] == ("weekly", Decimal(2500))
    assert stored["team:ranking"] == ("monthly", Decimal(12000))
    text = registry_to_yaml(export_registry(session=session))
    again = parse_registry(text)
    assert {(b.scope, b.period, b.per_period) for b in again.budgets} == {
        (scope, period, amount) for scope, (period, amount) in stored.items()
    }
    assert "scope: team:ranking\n  monthly: 12000\n" in text
    assert "scope: model:beta\n  amount: 2500\n  period: weekly\n" in text
    # importing the export changes nothing: no new revision, nothing re-alerted
    revisions = {b.scope: b.amount_revision for b in session.scalars(select(Budget))}
    changes = import_registry(again, session=session, actor="test").counts()
    assert changes["updated"] == 0
    assert {b.scope: b.amount_revision for b in session.scalars(select(Budget))} == revisions


WEEKLY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - {name: alpha, team: ranking, owners: [U0AAA111], channel: C0ALPHA}
budgets:
  - {scope: "model:alpha", amount: 1000, period: weekly, thresholds: [80, 100]}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
"""


def spend(factory: sessionmaker[Session], day: dt.date, cost: str) -> None:
    with session_scope(factory) as session:
        add_spend(session, [spend_row(day, "alpha", "training", "ranking", cost)])


def cycle(factory: sessionmaker[Session], settings: Settings, day: dt.date) -> list[str]:
    """Run the budget check the morning after `day`; return the keys it queued."""
    now = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(7), dt.UTC)
    report = run_cycle(session_factory=factory, settings=settings, now=now, checks=("budgets",))
    return sorted(p.dedupe_key for p in report.planned)


def test_a_weekly_budget_alerts_once_a_week_across_boundaries_and_changes(
    database_url: str,
) -> None:
    settings = Settings(database_url=database_url)
    nov = lambda d: dt.date(2026, 11, d)  # noqa: E731
    with migrated(database_url) as (_engine, factory):
        with session_scope(factory) as session:
            import_registry(parse_registry(WEEKLY), session=session, actor="test")
        spend(factory, nov(20), "500")  # Friday of the week of Nov 16
        assert cycle(factory, settings, nov(20)) == []
        spend(factory, nov(21), "350")  # 850 of 1000
        assert cycle(factory, settings, nov(21)) == ["budget:model:alpha:w2026-11-16:actual:80"]
        assert cycle(factory, settings, nov(21)) == []  # polled twice in the period
        assert cycle(factory, settings, nov(22)) == []  # Sunday: the same week
        # Monday: a new week, nothing spent yet; 900 by Tuesday alerts 80 % again, once
        assert cycle(factory, settings, nov(23)) == []
        spend(factory, nov(23), "450")
        spend(factory, nov(24), "450")
        assert cycle(factory, settings, nov(24)) == ["budget:model:alpha:w2026-11-23:actual:80"]
        assert cycle(factory, settings, nov(24)) == []
        # Acknowledge holds for the rest of that week (the button carries the week's label)
        with session_scope(factory) as session:
            acknowledge_budget(
                session=session,
                user_id="U0AAA111",
                scope="model:alpha",
                period="w2026-11-23",
                now=dt.datetime(2026, 11, 25, 9, tzinfo=dt.UTC),
            )
        spend(factory, nov(25), "50")  # 950: 80 % again, acknowledged
        assert cycle(factory, settings, nov(25)) == []
        spend(factory, nov(26), "60")  # 1010: exceeded is always posted
        assert cycle(factory, settings, nov(26)) == ["budget:model:alpha:w2026-11-23:actual:100"]
        # a new amount is a new revision: fresh thresholds within the week, then once again
        with session_scope(factory) as session:
            set_budget(
                session=session, user_id="U0AAA111", scope="model:alpha", amount=Decimal(1200)
            )
        assert cycle(factory, settings, nov(26)) == ["budget:model:alpha:w2026-11-23:actual:80:r1"]
        assert cycle(factory, settings, nov(26)) == []
        # a new period (weekly -> daily) is a new revision too: the day's 60 of 50 is over
        with session_scope(factory) as session:
            set_budget(
                session=session,
                user_id="U0AAA111",
                scope="model:alpha",
                amount=Decimal(50),
                period="daily",
            )
            silence = session.scalars(select(AlertSilence)).one()
            assert silence.period == "w2026-11-23"
        assert cycle(factory, settings, nov(26)) == ["budget:model:alpha:d2026-11-26:actual:100:r2"]
        assert cycle(factory, settings, nov(26)) == []
        assert cycle(factory, settings, nov(27)) == []  # nothing spent on the 27th


def test_budget_set_audits_the_period_before_and_after(session: Session) -> None:
    import_registry(parse_registry(WEEKLY), session=session, actor="test")
    set_budget(
        session=session,
        user_id="U0AAA111",
        scope="model:alpha",
        amount=Decimal(12000),
        period="monthly",
    )
    session.flush()
    budget = session.scalars(select(Budget)).one()
    assert (budget.period, budget.monthly_amount, budget.amount_revision) == (
        "monthly",
        Decimal(12000),
        1,
    )
    audit = session.scalars(select(AuditLog).where(AuditLog.action == "budget.set")).one()
    before = audit.detail["before"]
    assert Decimal(before.pop("amount")) == 1000  # a weekly amount is written `amount`
    assert before == {"period": "weekly", "thresholds": [80, 100]}
    assert audit.detail["after"] == {
        "monthly": "12000",
        "period": "monthly",
        "thresholds": [80, 100],
    }
    entries = audit_trail(session=session, subject="model:alpha").entries
    [entry] = [e for e in entries if e.action == "budget.set"]
    line = change_line(entry)
    assert "period=weekly" in line and "period=monthly" in line
