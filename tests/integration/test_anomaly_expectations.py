"""Expected answers on a real database: a driver accepted for the rest of its month, no further.

alpha trains on one instance for $80 a day and stores for $30. On Nov 10 the instance costs
$1,000: an anomaly, answered Expected by alpha's owner. Later November days at or below that
level are quiet; a day far beyond it alerts; the same $1,000 in December alerts again.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from bot.anomalies.answers import answer_anomaly
from bot.anomalies.detect import Anomaly, scan_anomalies
from bot.audit.trail import audit_trail
from bot.budgets.messages import AlertContext
from bot.db.engine import session_scope
from bot.db.schema import AnomalyExpectation, AuditLog
from bot.errors import PermissionDenied
from bot.registry.spec import parse_registry
from bot.registry.sync import import_registry
from bot.slack.blocks.alerts import build_anomaly_alert
from tests.support.alert_walk import HISTORY_START, add_spend, days, spend_row
from tests.support.database import migrated

SPIKE = dt.date(2026, 11, 10)
KEY = "anomaly:spend:model:alpha:2026-11-10"
TRAIN = {
    SPIKE: "1000",
    dt.date(2026, 11, 11): "900",  # still up, below the accepted level
    dt.date(2026, 11, 20): "1000",  # up again, at the level
    dt.date(2026, 11, 25): "2600",  # far beyond it
    dt.date(2026, 12, 3): "1000",  # the level, but next month
}
NOW = dt.datetime(2026, 11, 11, 9, 30, tzinfo=dt.UTC)


def alpha_rows(day: dt.date) -> list[dict]:
    train = spend_row(day, "alpha", "training", "ranking", TRAIN.get(day, "80"), resource="i-alpha")
    store = spend_row(
        day, "alpha", "storage", "ranking", "30", resource="s3://alpha", service="Amazon S3"
    )
    train["usage_type"] = "BoxUsage:p4d.24xlarge"
    return [train, store]


def alpha_spikes(session: Session, first: dt.date, last: dt.date) -> dict[dt.date, Anomaly]:
    found = scan_anomalies(session=session, first=first, last=last, min_excess=Decimal(100))
    return {a.day: a for a in found.anomalies if a.scope == "model:alpha"}


@pytest.fixture
def factory(database_url: str):
    with migrated(database_url) as (_engine, factory):
        with session_scope(factory) as session:
            import_registry(parse_registry(REGISTRY), session=session, actor="test")
            add_spend(
                session,
                [r for d in days(HISTORY_START, dt.date(2026, 12, 6)) for r in alpha_rows(d)],
            )
        yield factory


REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - {name: alpha, team: ranking, owners: [U0ALPHA01]}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
"""


def answer(factory: sessionmaker[Session], user: str, what: str = "expected") -> bool:
    with session_scope(factory) as session:
        return answer_anomaly(
            session=session,
            key=KEY,
            answer=what,
            user_id=user,
            amount=Decimal(1030),
            excess=Decimal(920),
            now=NOW,
        ).recorded


def test_without_an_answer_every_raised_day_alerts(factory: sessionmaker[Session]) -> None:
    with session_scope(factory) as session:
        spikes = alpha_spikes(session, SPIKE, dt.date(2026, 12, 5))
    assert sorted(spikes) == sorted(TRAIN)
    # the Nov 10 anomaly names the instance first (its service carries the same dollars)
    drivers = [(d.dimension, d.value, d.amount, d.usual) for d in spikes[SPIKE].drivers]
    assert drivers == [
        ("resource_id", "i-alpha", Decimal(1000), Decimal(80)),
        ("usage_type", "BoxUsage:p4d.24xlarge", Decimal(1000), Decimal(80)),
        ("service", "Amazon Elastic Compute Cloud", Decimal(1000), Decimal(80)),
    ]
    assert spikes[SPIKE].value == Decimal(1030) and spikes[SPIKE].expected == 0


def test_expected_quiets_the_month_up_to_its_level_and_not_beyond_or_after(
    factory: sessionmaker[Session],
) -> None:
    assert answer(factory, "U0ALPHA01") is True
    with session_scope(factory) as session:
        row = session.scalars(select(AnomalyExpectation)).one()
        spikes = alpha_spikes(session, SPIKE, dt.date(2026, 12, 5))
    assert (row.answer, row.scope, row.month, row.anomaly_day, row.user_id, row.at) == (
        "expected",
        "model:alpha",
        "2026-11",
        SPIKE,
        "U0ALPHA01",
        NOW,
    )
    assert (row.dimension, row.value, row.level, row.usual) == (
        "resource_id",
        "i-alpha",
        Decimal(1000),
        Decimal(80),
    )
    assert (row.amount, row.excess) == (Decimal(1030), Decimal(920))
    # Nov 10 itself (already posted), Nov 11 and Nov 20 are expected; Nov 25 and Dec 3 are not
    assert sorted(spikes) == [dt.date(2026, 11, 25), dt.date(2026, 12, 3)]
    beyond = spikes[dt.date(2026, 11, 25)]
    assert beyond.expected == Decimal(1000 - 80)  # the accepted rise, no more
    assert beyond.value == Decimal(2630)
    assert spikes[dt.date(2026, 12, 3)].expected == 0
    _, blocks = build_anomaly_alert(beyond, AlertContext(channel="C0RANKING"))
    body = blocks[1]["text"]["text"]
    assert "$920 of it was answered Expected this month" in body
    assert "resource `i-alpha`: $2,600 (usual $80.00, +$2,520)" in body


def test_not_expected_changes_no_judgement_and_an_answer_is_recorded_once(
    factory: sessionmaker[Session],
) -> None:
    assert answer(factory, "U0AAA111", "not_expected") is True  # the team's owner may answer
    assert answer(factory, "U0ADMIN01", "expected") is False  # answered already: nothing
    assert answer(factory, "U0AAA111", "not_expected") is False
    with session_scope(factory) as session:
        rows = session.scalars(select(AnomalyExpectation)).all()
        audits = session.scalars(select(AuditLog).where(AuditLog.action.like("anomaly.%"))).all()
        spikes = alpha_spikes(session, SPIKE, dt.date(2026, 12, 5))
        page = audit_trail(session=session, subject="alpha")
    assert [(r.answer, r.user_id) for r in rows] == [("not_expected", "U0AAA111")]
    assert [(a.actor, a.action, a.target) for a in audits] == [
        ("U0AAA111", "anomaly.not_expected", "model:alpha")
    ]
    assert sorted(spikes) == sorted(TRAIN)  # nothing accepted
    entry = next(e for e in page.entries if e.action == "anomaly.not_expected")
    assert entry.before is None
    assert entry.after == {"answer": "not_expected", "driver": "resource_id=i-alpha"}


def test_a_stranger_cannot_answer_and_nothing_changes(factory: sessionmaker[Session]) -> None:
    with pytest.raises(PermissionDenied, match="Only the owners of alpha"):
        answer(factory, "U0STRANGER")
    with session_scope(factory) as session:
        assert session.scalars(select(AnomalyExpectation)).all() == []
        assert (
            session.scalars(select(AuditLog).where(AuditLog.action.like("anomaly.%"))).all() == []
        )
