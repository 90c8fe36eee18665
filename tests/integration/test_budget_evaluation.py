"""Budget sums in SQL agree with a plain Python reference, for every budget shape."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.anomalies.detect import find_anomalies
from bot.budgets.drivers import Drivers, top_drivers
from bot.budgets.evaluate import evaluate, evaluate_budgets
from bot.db.schema import Budget, ValueMetric
from bot.registry.spec import parse_registry
from bot.registry.sync import import_registry
from bot.spend.forecast import forecast_month_end, summarize_daily
from tests.support.alert_walk import ALERT_REGISTRY, add_spend, days, spend_row

FIRST = dt.date(2026, 10, 20)
AS_OF = dt.date(2026, 11, 17)
TEAMS = {"alpha": "ranking", "beta": "ranking", "gamma": "platform"}


def test_sql_sums_match_a_python_reference_for_every_shape(session: Session) -> None:
    import_registry(parse_registry(ALERT_REGISTRY), session=session, actor="test")
    session.add_all(
        [
            Budget(
                scope="team:ranking/stage:serving",
                team_name="ranking",
                stage="serving",
                monthly_amount=Decimal(900),
                thresholds=[100],
                forecast=True,
            ),
            Budget(
                scope="model:nobody",
                model_name="nobody",
                monthly_amount=Decimal(10),
                thresholds=[100],
            ),
        ]
    )
    rng = random.Random(7)
    rows = []
    for day in days(FIRST, AS_OF + dt.timedelta(days=3)):  # rows after as_of must not count
        for model in [*TEAMS, None]:
            for stage in ("training", "serving", "storage"):
                if rng.random() < 0.7:
                    cost = f"{rng.randint(0, 50_000) / 100:.2f}"
                    rows.append(
                        spend_row(
                            day,
                            model,
                            stage,
                            TEAMS.get(model or ""),
                            cost,
                            resource=f"r-{rng.randint(1, 4)}",
                        )
                    )
    add_spend(session, rows)
    session.flush()

    def matches(row: dict, budget: Budget) -> bool:  # type: ignore[type-arg]
        return (
            (budget.model_name is None or row["model"] == budget.model_name)
            and (budget.team_name is None or row["team"] == budget.team_name)
            and (budget.stage is None or row["stage"] == budget.stage)
        )

    statuses = {s.scope: s for s in evaluate_budgets(session=session, as_of=AS_OF)}
    assert len(statuses) == 7
    for budget in session.scalars(select(Budget)):
        daily: dict[dt.date, Decimal] = {}
        for row in rows:
            if row["day"] <= AS_OF and matches(row, budget):
                daily[row["day"]] = daily.get(row["day"], Decimal(0)) + row["billed_cost"]
        reference = summarize_daily(daily, as_of=AS_OF, covered={r["day"] for r in rows})
        status = statuses[budget.scope]
        assert status.month_to_date == reference.month_to_date, budget.scope
        assert status.forecast == forecast_month_end(reference), budget.scope
    assert statuses["model:nobody"].month_to_date == 0

    # drivers: every budget shape, every dimension, against the same rows summed in Python
    budgets = list(session.scalars(select(Budget)))
    drivers = top_drivers(session=session, statuses=statuses.values())
    assert set(drivers) == {s.budget_id for s in statuses.values()}
    month_start = dt.date(2026, 11, 1)
    for budget in budgets:
        found = drivers[budget.id]
        month_rows = [r for r in rows if month_start <= r["day"] <= AS_OF and matches(r, budget)]
        for attribute, key in (
            ("stages", lambda r: r["stage"]),
            ("resources", lambda r: r["resource_id"]),
            ("days", lambda r: f"{r['day']:%a %b %-d}"),
        ):
            totals: dict[str, Decimal] = {}
            for r in month_rows:
                totals[key(r)] = totals.get(key(r), Decimal(0)) + r["billed_cost"]
            expected = sorted(
                ((label, cost) for label, cost in totals.items() if cost), key=lambda t: -t[1]
            )[:3]
            got = [(d.label, d.cost) for d in getattr(found, attribute)]
            assert [c for _, c in got] == [c for _, c in expected], (budget.scope, attribute)
            assert all(totals[label] == cost for label, cost in got), (budget.scope, attribute)
    alpha = drivers[statuses["model:alpha"].budget_id]
    assert len(alpha.resources) == 3 and len(alpha.days) == 3 and len(alpha.stages) == 3
    assert sum(d.cost for d in alpha.stages) == statuses["model:alpha"].month_to_date
    assert drivers[statuses["model:nobody"].budget_id] == Drivers()


def test_gpu_hours_rising_beyond_the_workload_is_an_anomaly(session: Session) -> None:
    import_registry(parse_registry(ALERT_REGISTRY), session=session, actor="test")
    rows = []
    for day in days(dt.date(2026, 10, 1), dt.date(2026, 11, 21)):
        # 24 GPU-hours a day at $4. On Nov 20 an orphaned pod adds 48 GPU-hours at a discounted
        # rate: spend rises only $60 (under the $100 minimum) while GPU-hours triple.
        rows.append(
            spend_row(day, "alpha", "training", "ranking", "96", resource="i-train", gpu_hours="24")
        )
        rows.append(
            spend_row(day, "beta", "serving", "ranking", "96", resource="i-serve", gpu_hours="24")
        )
    rows.append(
        spend_row(
            dt.date(2026, 11, 20),
            "alpha",
            "training",
            "ranking",
            "60",
            resource="pod-orphan-7",
            gpu_hours="48",
        )
    )
    rows.append(
        spend_row(
            dt.date(2026, 11, 20),
            "beta",
            "serving",
            "ranking",
            "60",
            resource="i-serve-2",
            gpu_hours="48",
        )
    )
    add_spend(session, rows)
    # beta served three times its usual predictions that day: its GPU-hours are explained
    for day in days(dt.date(2026, 10, 1), dt.date(2026, 11, 21)):
        units = Decimal(3_000_000 if day == dt.date(2026, 11, 20) else 1_000_000)
        session.add(ValueMetric(model_name="beta", day=day, metric="predictions", units=units))
    session.flush()
    found = find_anomalies(session=session, day=dt.date(2026, 11, 20), min_excess=Decimal(100))
    gpu = [a for a in found if a.kind == "gpu"]
    assert [a.scope for a in gpu] == ["model:alpha"]
    assert gpu[0].value == 72 and gpu[0].baseline.median == 24
    assert gpu[0].excess_cost >= 100
    assert gpu[0].resources[0][0] == "pod-orphan-7" and gpu[0].resources[0][2] is True
    assert not [a for a in found if a.kind == "spend" and a.scope == "model:alpha"]


def test_alert_days_from_the_evaluation_match_days_read_from_the_rollup(session: Session) -> None:
    # the poll takes a budget's top days from the sums its evaluation already read (the covered
    # days of the last 28) and reads the rollup only for the rest of a period: a quarter's first
    # weeks, and a day no source covered (here a tax charge alone, which the forecast does not
    # count as coverage); each budget's top days are the same either way, and are right
    import_registry(parse_registry(ALERT_REGISTRY), session=session, actor="test")
    for scope, model, period in (
        ("model:alpha/q", "alpha", "quarterly"),
        ("model:beta/w", "beta", "weekly"),
        ("model:gamma/d", "gamma", "daily"),
    ):
        session.add(
            Budget(
                scope=scope,
                model_name=model,
                period=period,
                monthly_amount=Decimal(1),
                thresholds=[100],
                forecast=True,
            )
        )
    rng = random.Random(11)
    tax_day = dt.date(2026, 11, 3)
    rows = []
    for day in days(dt.date(2026, 9, 25), AS_OF + dt.timedelta(days=1)):
        for model in TEAMS:
            # a day's spend in two stages: its top days add the stages' sums up
            for stage in ("training", rng.choice(("serving", "storage"))):
                cost = f"{rng.randint(1, 90_000) / 100:.2f}"
                resource = f"r-{rng.randint(1, 5)}"
                row = spend_row(day, model, stage, TEAMS[model], cost, resource=resource)
                if day == tax_day:
                    row["charge_category"] = "Tax"
                    row["billed_cost"] = row["effective_cost"] = Decimal("5000.00")  # top day
                rows.append(row)
    add_spend(session, rows)
    session.flush()

    evaluation = evaluate(session=session, as_of=AS_OF)
    assert tax_day not in evaluation.known_days("USD")  # so it is read from the rollup
    statuses = evaluation.statuses
    read = top_drivers(session=session, statuses=statuses)
    reused = top_drivers(session=session, statuses=statuses, evaluation=evaluation)
    assert {k: v.days for k, v in reused.items()} == {k: v.days for k, v in read.items()}
    for status in statuses:
        totals: dict[dt.date, Decimal] = {}
        resources: dict[str, Decimal] = {}
        stages: dict[str, Decimal] = {}
        for r in rows:
            in_scope = (
                status.model_name in (None, r["model"])
                and status.team_name in (None, r["team"])
                and status.stage in (None, r["stage"])
            )
            if in_scope and status.month.start <= r["day"] <= AS_OF:
                totals[r["day"]] = totals.get(r["day"], Decimal(0)) + r["billed_cost"]
                label = r["resource_id"]
                resources[label] = resources.get(label, Decimal(0)) + r["billed_cost"]
                stages[r["stage"]] = stages.get(r["stage"], Decimal(0)) + r["billed_cost"]
        # the resources of each budget's own period: a quarter's reach back to October 1
        top = sorted(resources.items(), key=lambda t: (-t[1], t[0]))[:3]
        assert [(d.label, d.cost) for d in reused[status.budget_id].resources] == top
        ranked_stages = sorted(stages.items(), key=lambda t: -t[1])
        assert [(d.label, d.cost) for d in reused[status.budget_id].stages] == ranked_stages
        expected = sorted(totals.items(), key=lambda t: (-t[1], t[0]))[:3]
        got = reused[status.budget_id].days
        assert [d.cost for d in got] == [c for _, c in expected], status.scope
        assert [d.label for d in got] == [f"{k:%a %b %-d}" for k, _ in expected], status.scope
    quarterly = next(s for s in statuses if s.scope == "model:alpha/q")
    assert reused[quarterly.budget_id].days[0].label == f"{tax_day:%a %b %-d}"
    assert dt.date(2026, 10, 1) < evaluation.known_days("USD")[0]  # the quarter needed the rollup
