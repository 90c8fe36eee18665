"""`--subject` on a real database: wildcards in names, and a name that is a model and a team."""

from __future__ import annotations

from sqlalchemy.orm import Session

from bot.audit.trail import MODEL, TEAM, audit_trail
from bot.db.schema import AuditLog
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
