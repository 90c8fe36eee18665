"""enqueue() says whether it recorded a new message, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import OutboxMessage
from bot.notify.outbox import enqueue


def test_enqueue_reports_a_duplicate_key_as_not_new(session: Session) -> None:
    def once() -> bool:
        return enqueue(
            session=session,
            dedupe_key="review:2026-11:x",
            kind="review.parent",
            channel="C1",
            text="t",
            blocks=[],
        )

    assert once() is True
    assert once() is False
    count = session.scalar(select(func.count()).select_from(OutboxMessage))
    assert count == 1
