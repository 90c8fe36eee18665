"""A GPU-hour anomaly is answered like a spend anomaly: Expected accepts the model's GPU-hours up
to that day's level for the rest of the month; more than that, or next month, alerts again."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from sqlalchemy.orm import Session

from bot.anomalies.answers import answer_anomaly
from bot.anomalies.detect import Anomaly, find_anomalies
from bot.budgets.messages import AlertContext
from bot.errors import PermissionDenied
from bot.slack.blocks.alerts import answered_note_for, build_anomaly_alert
from tests.integration.test_anomaly_runs import SPIKE, add
from tests.support.sample_registry import load_registry

OWNER = "U0AAA111"  # recsys's owner in the sample registry


def gpu_day(session: Session, day: dt.date, gpu_hours: str) -> None:
    """A day of recsys costing its usual $100 whatever its GPU-hours (cheaper capacity)."""
    add(session, day, "100", "steady-a", gpu=gpu_hours)
    session.flush()


def gpu_anomalies(session: Session, day: dt.date) -> list[Anomaly]:
    found = find_anomalies(session=session, day=day, min_excess=Decimal(50))
    return [a for a in found if a.kind == "gpu"]


def test_expected_quiets_the_months_gpu_hours_up_to_the_level_and_no_further(
    session: Session,
) -> None:
    load_registry(session)
    for back in range(1, 29):
        gpu_day(session, SPIKE - dt.timedelta(days=back), "10")
    gpu_day(session, SPIKE, "40")
    [anomaly] = gpu_anomalies(session, SPIKE)

    _text, blocks = build_anomaly_alert(anomaly, AlertContext(channel="C1"))
    actions = [b for b in blocks if b["type"] == "actions"]
    assert [e["action_id"] for e in actions[0]["elements"]] == [
        "anomaly_expected",
        "anomaly_not_expected",
    ]
    assert (
        "Expected accepts `model:recsys`'s GPU-hours up to 40.0 a day until the end of"
        in (blocks[-2]["elements"][0]["text"])
    )

    with pytest.raises(PermissionDenied):
        answer_anomaly(
            session=session,
            key=anomaly.dedupe_key,
            answer="expected",
            user_id="U0STRANGER",
            amount=anomaly.value,
            excess=anomaly.excess_cost,
            now=dt.datetime(2026, 11, 21, 9, tzinfo=dt.UTC),
        )
    answered = answer_anomaly(
        session=session,
        key=anomaly.dedupe_key,
        answer="expected",
        user_id=OWNER,
        amount=anomaly.value,
        excess=anomaly.excess_cost,
        now=dt.datetime(2026, 11, 21, 9, tzinfo=dt.UTC),
    )
    row = answered.row
    assert (row.dimension, row.value, row.level) == ("gpu_hours", "recsys", Decimal(40))
    assert "GPU-hours of `model:recsys` up to 40.0 a day do not alert again" in (
        answered_note_for(row)
    )

    gpu_day(session, SPIKE + dt.timedelta(days=1), "40")  # at the accepted level: quiet
    assert gpu_anomalies(session, SPIKE + dt.timedelta(days=1)) == []
    gpu_day(session, SPIKE + dt.timedelta(days=2), "90")  # well beyond it: alerts
    assert [a.value for a in gpu_anomalies(session, SPIKE + dt.timedelta(days=2))] == [Decimal(90)]
    first_of_december = dt.date(2026, 12, 1)
    for day in range((first_of_december - SPIKE).days - 3):
        gpu_day(session, SPIKE + dt.timedelta(days=3 + day), "10")
    gpu_day(session, first_of_december, "40")  # next month: the answer no longer holds
    assert [a.day for a in gpu_anomalies(session, first_of_december)] == [first_of_december]
