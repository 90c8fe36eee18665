"""The release gate: every failing reason, and a pass; the CLI's exit codes and JSON."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from bot.cli import main
from bot.config import Settings
from bot.db.schema import AlertSilence, Review, ReviewItem
from bot.economics.gate import evaluate_gate, instance_family
from tests.support.cli import import_registry_file, ingest_focus_days
from tests.support.economics_seed import add_spend, add_value
from tests.support.ledger import ingestion_run, spend_record
from tests.support.sample_registry import load_registry

AS_OF = dt.date(2026, 11, 30)
REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
  - {name: lab, channel: C0LAB}
models:
  - {name: good, team: ranking, owners: [U0AAA111]}
  - {name: stray, team: lab}
  - {name: nobudget, team: ranking}
budgets:
  - {scope: "model:good", monthly: 1000}
  - {scope: "model:good/stage:training", monthly: 400}
  - {scope: "model:stray", monthly: 1000}
admins: [U0ADMIN01]
"""


def steady(
    session: Session,
    model: str,
    daily_cost: str = "10",
    units: int = 1000,
    recent_cost: str | None = None,
    recent_units: int | None = None,
) -> None:
    """60 days of serving spend and predictions up to AS_OF; the last 30 may differ."""
    for back in range(60):
        day = AS_OF - dt.timedelta(days=back)
        recent = back < 30
        add_spend(
            session,
            model,
            "t",
            "serving",
            day,
            (recent_cost if recent and recent_cost else daily_cost),
        )
        add_value(session, model, day, recent_units if recent and recent_units else units)


def gate(session: Session, model: str, **settings: object) -> tuple[bool, list[str]]:
    result = evaluate_gate(
        session=session, model_name=model, as_of=AS_OF, settings=Settings(**settings)
    )  # type: ignore[arg-type]
    return result.passed, result.reasons


def test_a_model_with_owner_budget_and_steady_unit_cost_passes(session: Session) -> None:
    load_registry(session, REGISTRY)
    steady(session, "good")
    assert gate(session, "good") == (True, [])


def test_fails_without_an_owner(session: Session) -> None:
    load_registry(session, REGISTRY)
    steady(session, "stray")
    passed, reasons = gate(session, "stray")
    assert not passed and reasons == ["stray has no owner (set one in the registry)"]


def test_fails_without_a_budget(session: Session) -> None:
    load_registry(session, REGISTRY)
    steady(session, "nobudget")
    passed, reasons = gate(session, "nobudget")
    assert not passed and reasons == ["nobudget has no budget"]


def test_fails_over_budget_until_acknowledged(session: Session) -> None:
    load_registry(session, REGISTRY)
    steady(session, "good")
    add_spend(session, "good", "ranking", "training", AS_OF, "450")  # over the stage budget
    add_spend(session, "good", "ranking", "training", dt.date(2026, 10, 20), "450")  # steady
    passed, reasons = gate(session, "good")
    assert not passed and len(reasons) == 1
    assert reasons[0].startswith("model:good/stage:training is over budget in 2026-11: $450")
    session.add(
        AlertSilence(
            budget_scope="model:good/stage:training",
            period="2026-10",
            kind="ack",
            user_id="U0AAA111",
        )
    )
    session.add(
        AlertSilence(
            budget_scope="model:good/stage:training",
            period="2026-11",
            kind="snooze",
            user_id="U0AAA111",
        )
    )
    session.flush()
    assert not gate(session, "good")[0]  # last month's ack and a snooze do not count
    session.add(
        AlertSilence(
            budget_scope="model:good/stage:training",
            period="2026-11",
            kind="ack",
            user_id="U0AAA111",
        )
    )
    session.flush()
    assert gate(session, "good") == (True, [])


def decide_good(
    session: Session,
    month: str,
    decision: str,
    user: str,
    on: dt.date,
    reason: str | None = None,
) -> None:
    """Record ranking's review of a month in which `good` was decided."""
    review = Review(month=month, team_name="ranking", channel="C0RANKING")
    review.items.append(
        ReviewItem(
            model_name="good",
            decision=decision,
            decided_by=user,
            decided_at=dt.datetime(on.year, on.month, on.day, tzinfo=dt.UTC),
            reason=reason,
        )
    )
    session.add(review)
    session.flush()


def test_fails_when_the_last_review_decided_kill(session: Session) -> None:
    load_registry(session, REGISTRY)
    steady(session, "good")
    decide_good(session, "2026-10", "kill", "U0AAA111", dt.date(2026, 11, 2), reason="no lift")
    passed, reasons = gate(session, "good")
    assert not passed
    assert reasons == ["decided Kill in the 2026-10 review by U0AAA111 on 2026-11-02 (no lift)"]
    decide_good(session, "2026-11", "keep", "U0ADMIN01", dt.date(2026, 12, 1))
    assert gate(session, "good") == (True, [])


def test_fails_when_unit_cost_rose_past_the_limit_without_value_rising(session: Session) -> None:
    load_registry(session, REGISTRY)
    steady(session, "good", daily_cost="10", recent_cost="12.50")  # +25 %, value flat
    passed, reasons = gate(session, "good")
    assert not passed and len(reasons) == 1
    assert "unit cost rose +25 % (limit +20 %) while value changed 0 %" in reasons[0]
    assert gate(session, "good", MLCOST_GATE_MAX_UNIT_COST_RISE_PCT=30) == (True, [])


def test_unit_cost_rising_with_value_rising_passes(session: Session) -> None:
    load_registry(session, REGISTRY)
    steady(session, "good", daily_cost="10", recent_cost="15", recent_units=1100)  # +36 % per unit
    assert gate(session, "good") == (True, [])


def test_cli_exit_codes_and_json(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = import_registry_file(database_url, tmp_path, REGISTRY)
    values = tmp_path / "values.csv"
    values.write_text("date,model,metric,units,revenue\n2026-11-30,good,predictions,1000,\n")
    assert main([*db, "ingest", "value", str(values)]) == 0
    ingest_focus_days(db, tmp_path, [AS_OF], model="unregistered")  # the ledger is fed
    capsys.readouterr()
    assert main([*db, "gate", "good", "--as-of", "2026-11-30"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("gate PASS: good (as of 2026-11-30)")
    assert main([*db, "gate", "nobudget", "--as-of", "2026-11-30", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["pass"] is False and data["reasons"] == ["nobudget has no budget"]
    assert {c["name"] for c in data["checks"]} == {
        "owner",
        "budget",
        "review",
        "value",
        "unit cost",
    }
    assert main([*db, "gate", "stray", "--as-of", "2026-11-30"]) == 1
    assert "FAIL owner: stray has no owner" in capsys.readouterr().out
    assert main([*db, "gate", "goood"]) == 3  # could not evaluate
    assert "Did you mean 'good'" in capsys.readouterr().err


def test_the_seeds_cost_with_no_value_model_fails(session: Session) -> None:
    """churn cost $10 a day since October and never recorded value: the review flags it."""
    from tests.support.economics_seed import REGISTRY as SEED_REGISTRY
    from tests.support.economics_seed import seed_review_month

    load_registry(session, SEED_REGISTRY)
    seed_review_month(session)
    passed, reasons = gate(session, "churn")
    assert not passed
    assert reasons == [
        "churn cost $300.00 in the last 30 days and recorded no value "
        "(record it with mlcost ingest value)"
    ]


def test_a_model_spending_for_less_than_the_window_awaits_value(session: Session) -> None:
    load_registry(session, REGISTRY)
    for back in range(10):  # new this month: training before its first release
        add_spend(session, "good", "ranking", "training", AS_OF - dt.timedelta(days=back), "5")
    result = evaluate_gate(session=session, model_name="good", as_of=AS_OF, settings=Settings())
    assert result.passed
    check = next(c for c in result.checks if c.name == "value")
    assert check.detail == "no value recorded yet; spending since 2026-11-21 (under 30 days)"


POLICY_REGISTRY = REGISTRY.replace(
    "  - {name: good, team: ranking, owners: [U0AAA111]}\n",
    "  - name: good\n"
    "    team: ranking\n"
    "    owners: [U0AAA111]\n"
    "    gate: {max_monthly: 400, max_unit_cost_rise_pct: 19, "
    "allowed_instance_families: [g5, ml-custom]}\n",
)


def add_instance_spend(session: Session, model: str, instance_type: str, cost: str) -> None:
    run = ingestion_run(session, location="synthetic", status="ok")
    session.add(
        spend_record(
            run,
            AS_OF,
            cost,
            model=model,
            team="ranking",
            stage="training",
            instance_type=instance_type,
        )
    )
    session.flush()


def test_a_gate_policy_passes_within_its_limits(session: Session) -> None:
    load_registry(session, POLICY_REGISTRY)
    steady(session, "good")  # $10 a day: $300 in the last 30 days, unit cost flat
    add_instance_spend(session, "good", "ml.g5.2xlarge", "50")
    add_instance_spend(session, "good", "", "1")  # no instance type: not judged
    result = evaluate_gate(session=session, model_name="good", as_of=AS_OF, settings=Settings())
    details = {c.name: (c.passed, c.detail) for c in result.checks}
    assert result.passed
    assert details["max monthly"] == (
        True,
        "$351.00 in the last 30 days (max_monthly $400.00)",
    )
    assert details["instance families"] == (True, "only g5, ml-custom in the last 30 days")
    assert details["unit cost"][1].endswith(
        "(limit 19 % (the model's gate policy) unless value rises)"
    )


def test_a_gate_policy_fails_over_max_monthly_and_outside_its_families(session: Session) -> None:
    load_registry(session, POLICY_REGISTRY)
    steady(session, "good")
    add_instance_spend(session, "good", "p4d.24xlarge", "80")
    add_instance_spend(session, "good", "ml.p4d.24xlarge", "20.50")
    add_instance_spend(session, "good", "Standard_NC24ads_A100_v4", "5")
    passed, reasons = gate(session, "good")
    assert not passed
    assert reasons == [
        # $300 steady plus $105.50 on GPUs; the unit cost rose too (value flat): +35 % > 19 %
        "last 30 days vs the 30 before: unit cost rose +35 % (limit +19 %) while value changed "
        "0 % (the model's gate policy)",
        "good cost $405.50 in the last 30 days, over its gate policy's max_monthly of $400.00",
        "spent $5.00 on nc (Standard_NC24ads_A100_v4); $100.50 on p4d (ml.p4d.24xlarge, "
        "p4d.24xlarge) in the last 30 days; its gate policy allows g5, ml-custom",
    ]


def test_the_policys_unit_cost_limit_replaces_the_setting(session: Session) -> None:
    load_registry(
        session, POLICY_REGISTRY.replace("max_unit_cost_rise_pct: 19", "max_unit_cost_rise_pct: 30")
    )
    steady(session, "good", daily_cost="10", recent_cost="12.50")  # +25 %: over the default 20 %
    assert gate(session, "good") == (True, [])
    assert not gate(session, "stray")[0]  # another model keeps the setting (and has no owner)


def test_models_without_a_policy_run_no_policy_checks(session: Session) -> None:
    load_registry(session, REGISTRY)
    steady(session, "good")
    result = evaluate_gate(session=session, model_name="good", as_of=AS_OF, settings=Settings())
    assert [c.name for c in result.checks] == [
        "owner",
        "budget",
        "over budget",
        "review",
        "value",
        "unit cost",
    ]


@pytest.mark.parametrize(
    ("instance_type", "family"),
    [
        ("g5.xlarge", "g5"),
        ("ml.p4d.24xlarge", "p4d"),
        ("p6-b200.48xlarge", "p6-b200"),
        ("a2-highgpu-1g", "a2"),
        ("Standard_NC24ads_A100_v4", "nc"),
        ("Standard_ND96isr_H100_v5", "nd"),
    ],
)
def test_instance_families(instance_type: str, family: str) -> None:
    assert instance_family(instance_type) == family
