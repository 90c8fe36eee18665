"""enqueue() says whether it recorded a new message, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import OutboxMessage
from bot.db.tables import OutboxStatus
from bot.notify.outbox import PlannedPost, PreRendered, enqueue, enqueue_many


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


def test_a_batch_records_only_new_keys_with_every_column(session: Session) -> None:
    # a batch is one INSERT ... ON CONFLICT DO NOTHING RETURNING: on both databases it stores
    # every column and names only the keys that were new
    def post(key: str, text: str, thread: str | None = None) -> PlannedPost:
        return PlannedPost(
            key, "budget_alert", "C9", PreRendered(text, [{"type": "divider"}]), thread
        )

    assert enqueue_many(session, [post("a", "first"), post("b", "second", "thread:b")]) == {
        "a",
        "b",
    }
    new = enqueue_many(session, [post("b", "changed"), post("c", "third"), post("d", "fourth")])
    assert new == {"c", "d"}
    rows = {
        row.dedupe_key: row
        for row in session.scalars(select(OutboxMessage).order_by(OutboxMessage.id))
    }
    assert list(rows) == ["a", "b", "c", "d"]
    b = rows["b"]  # the first recording stands
    assert (b.kind, b.channel, b.thread_key) == ("budget_alert", "C9", "thread:b")
    assert b.payload == {"text": "second", "blocks": [{"type": "divider"}]}
    assert (b.status, b.attempts, b.last_error) == (OutboxStatus.PENDING, 0, None)
    assert b.created_at.tzinfo is not None
    assert rows["c"].thread_key is None
    assert enqueue_many(session, []) == set()
