"""Unit economics from the database, checked against an independent computation."""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict
from decimal import Decimal
from fractions import Fraction

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.schema import ValueMetric
from bot.economics.unit_costs import economics_for
from bot.economics.value_metrics import ValueRow, parse_value_csv, record_values, value_totals
from bot.economics.verdicts import VerdictKind
from bot.errors import IngestError
from bot.periods import month_period
from tests.support.economics_seed import (
    REGISTRY,
    add_spend,
    add_value,
    month_days,
    seed_review_month,
)
from tests.support.sample_registry import load_registry

OCT, NOV = month_period("2026-10"), month_period("2026-11")


def test_known_answers_for_a_review_month(session: Session) -> None:
    load_registry(session, REGISTRY)
    seed_review_month(session)
    result = economics_for(session=session, period=NOV, previous=OCT)
    recsys = result["recsys"]
    assert recsys.current.cost == Decimal(1500) and recsys.previous.cost == Decimal(1000)
    assert recsys.current.cost_by_stage == {"serving": Decimal(600), "training": Decimal(900)}
    assert recsys.unit_cost == Decimal("1.5") and recsys.previous_unit_cost == Decimal(1)
    assert recsys.stage_unit_cost("serving") == Decimal("0.6")
    assert recsys.unit_cost_change_pct == Decimal(50)
    assert recsys.verdict.kind is VerdictKind.COST_INCIDENT
    assert recsys.budget_used_pct == Decimal(75)
    search = result["search"]
    assert search.unit_cost == Decimal("0.225") and search.previous_unit_cost == Decimal("0.3")
    assert search.verdict.kind is VerdictKind.EFFICIENT_GROWTH
    churn = result["churn"]
    assert churn.current.cost == Decimal(300) and churn.metric is None
    assert churn.verdict.kind is VerdictKind.NO_VALUE and churn.verdict.flagged
    assert "orphan" not in result


def test_matches_an_independent_computation_on_random_data(session: Session) -> None:
    load_registry(session, REGISTRY)
    rng = random.Random(5)
    models = ["recsys", "search", "churn"]
    expected_cost: dict[tuple[str, str, str], Fraction] = defaultdict(Fraction)
    expected_units: dict[tuple[str, str], Fraction] = defaultdict(Fraction)
    for period in (OCT, NOV):
        for day in month_days(period.start.year, period.start.month):
            for model in models:
                for stage in ("serving", "training", "storage"):
                    if rng.random() < 0.3:
                        continue
                    cost = Decimal(rng.randint(0, 10**8)) / Decimal(10**6)  # up to $100.000000
                    add_spend(session, model, "t", stage, day, cost)
                    expected_cost[(period.label, model, stage)] += Fraction(cost)
                if model != "churn" and rng.random() < 0.8:
                    csv_units = rng.randint(1, 10**6)
                    add_value(session, model, day, csv_units, source="csv")
                    final = csv_units
                    if rng.random() < 0.2:  # a person corrected the day in Slack: that wins
                        final = rng.randint(1, 10**6)
                        add_value(session, model, day, final, source="slack")
                    expected_units[(period.label, model)] += final
    add_spend(session, None, None, "serving", NOV.start, Decimal(999))  # unallocated: ignored
    result = economics_for(session=session, period=NOV, previous=OCT)
    for model in models:
        economics = result[model]
        for usage in (economics.current, economics.previous):
            label = usage.period.label
            stages = ("serving", "training", "storage")
            cost = sum((expected_cost[(label, model, s)] for s in stages), Fraction(0))
            assert Fraction(usage.cost) == cost
            units = expected_units[(label, model)]
            assert Fraction(usage.units) == units
            if units:
                want = cost * 1000 / units
                got = usage.usage().unit_cost()
                assert got is not None and abs(Fraction(got) - want) < Fraction(1, 10**15)
                serving = expected_cost[(label, model, "serving")] * 1000 / units
                got_serving = usage.usage().unit_cost("serving")
                assert got_serving is not None
                assert abs(Fraction(got_serving) - serving) < Fraction(1, 10**15)
        change = economics.unit_cost_change_pct
        if expected_units[("2026-10", model)] and expected_units[("2026-11", model)]:
            before = (
                sum(v for k, v in expected_cost.items() if k[:2] == ("2026-10", model))
                * 1000
                / expected_units[("2026-10", model)]
            )
            after = (
                sum(v for k, v in expected_cost.items() if k[:2] == ("2026-11", model))
                * 1000
                / expected_units[("2026-11", model)]
            )
            assert change is not None
            assert abs(Fraction(change) - (after - before) * 100 / before) < Fraction(1, 10**12)


def test_recording_the_same_key_replaces_never_doubles(session: Session) -> None:
    load_registry(session, REGISTRY)
    day = dt.date(2026, 11, 3)
    for units in (100, 250):
        record_values(
            [ValueRow("recsys", day, "predictions", Decimal(units), Decimal("9.5"))],
            session=session,
            source="csv",
            recorded_by="cli",
        )
    rows = session.scalars(select(ValueMetric).where(ValueMetric.model_name == "recsys")).all()
    assert [(r.units, r.revenue) for r in rows] == [(Decimal(250), Decimal("9.5"))]
    totals = value_totals(session=session, period=NOV)
    assert totals["recsys"]["predictions"].units == Decimal(250)
    assert totals["recsys"]["predictions"].revenue == Decimal("9.5")


def test_csv_errors_name_line_and_field() -> None:
    known = {"recsys", "search"}
    good = "date,model,metric,units,revenue\n2026-11-01,recsys,predictions,1200,\n"
    assert parse_value_csv(good, known) == [
        ValueRow("recsys", dt.date(2026, 11, 1), "predictions", Decimal(1200), None)
    ]
    bad = (
        "date,model,metric,units,revenue\n"
        "2026-11-01,recsys,predictions,1200,\n"
        "2026-11-31,recsys,predictions,1200,\n"
        "2026-11-02,recsy,predictions,1200,\n"
        "2026-11-02,recsys,predictions,lots,\n"
        "2026-11-02,recsys,Pred ictions,5,\n"
        "2026-11-03,recsys,predictions,5,abc\n"
        "2026-11-01,recsys,predictions,7,\n"
    )
    with pytest.raises(IngestError) as info:
        parse_value_csv(bad, known, "v.csv")
    message = str(info.value)
    assert "v.csv:3: date: '2026-11-31' is not a date" in message
    assert "v.csv:4: model: unknown model 'recsy'" in message
    assert "v.csv:5: units:" in message
    assert "v.csv:6: metric:" in message
    assert "v.csv:7: revenue:" in message
    assert "(and 1 more)" in message
    with pytest.raises(IngestError, match=r"v\.csv:1: missing column"):
        parse_value_csv("date,model,units\n", known, "v.csv")
    with pytest.raises(IngestError, match="duplicate of line 2"):
        parse_value_csv(good + "2026-11-01,recsys,predictions,5,\n", known)
