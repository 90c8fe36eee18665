"""`--subject` on a real database: wildcards in names, and a name that is a model and a team."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.audit.trail import MODEL, TEAM, audit_trail
from bot.budgets.admin import set_budget
from bot.db.schema import AuditLog
from tests.support.sample_registry import REGISTRY as SAMPLE
from tests.support.sample_registry import load_registry

REGISTRY = """\
teams:
  - {name: both, owners: [U0TTT111]}
  - {name: other, owners: [U0OOO111]}
models:
  - {name: both, team: other, owners: [U0MMM111]}
  - {name: a_b, team: other}
"""


def targets(session: Session, subject: str, kind: str | None = None) -> list[str]:
    page = audit_trail(session=session, subject=subject, subject_kind=kind, limit=100)
    return sorted(e.subject for e in page.entries if e.action == "budget.set")  # not the import's


def test_subject_matching(session: Session) -> None:
    load_registry(session, REGISTRY)
    for target in (
        "model:a_b",
        "model:axb",  # `_` must not match any character
        "model:a_b/stage:training",
        "model:both",
        "team:both",
        "review:2026-10:both",
        "review:2026-10:both:model:x",
        "review:2026-10:other:model:both",
    ):
        session.add(AuditLog(actor="U0TTT111", action="budget.set", target=target, detail={}))
    session.flush()
    assert targets(session, "a_b") == ["model:a_b", "model:a_b/stage:training"]
    assert targets(session, "model:a_b") == ["model:a_b"]
    assert targets(session, "both", MODEL) == ["model:both", "review:2026-10:other:model:both"]
    assert targets(session, "both", TEAM) == [
        "review:2026-10:both",
        "review:2026-10:both:model:x",
        "team:both",
    ]
    assert len(targets(session, "both")) == 5


def test_the_trail_lists_changes_in_the_order_they_were_made_whatever_the_hosts_clocks(
    session: Session,
) -> None:
    """Two replicas, one whose clock runs 5 minutes ahead, change one budget in turn: the trail
    shows the chain in the order the changes were made (each before the previous after)."""
    load_registry(session, SAMPLE)
    now = dt.datetime(2026, 12, 4, 12, 0, tzinfo=dt.UTC)
    for amount, at in (
        (15000, now + dt.timedelta(minutes=5)),
        (9000, now + dt.timedelta(minutes=1)),
    ):
        set_budget(
            session=session, user_id="U0AAA111", scope="model:recsys", amount=Decimal(amount)
        )
        record = session.scalars(select(AuditLog).order_by(AuditLog.id.desc()).limit(1)).one()
        record.at = at  # as the replica that made it read its clock
    session.flush()
    page = audit_trail(session=session, subject="model:recsys", limit=100)
    changes = [
        (e.before["monthly"], e.after["monthly"]) for e in page.entries if e.action == "budget.set"
    ]
    assert changes == [("15000", "9000"), ("12000", "15000")]  # newest first
