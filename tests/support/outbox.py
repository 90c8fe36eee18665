"""Outbox builders shared by the outbox tests: queue a message, read the rows, make one due."""

from __future__ import annotations

import datetime as dt
from typing import Any

from slack_sdk import WebClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from bot.bootstrap import system_clock
from bot.db.engine import session_scope
from bot.db.schema import OutboxMessage
from bot.notify.delivery import DeliveryEdge
from bot.notify.outbox import (
    METADATA_EVENT,
    FindPosted,
    PlannedPost,
    PreRendered,
    Renderer,
    enqueue_many,
    render_payload,
    stored_payload,
)
from bot.slack.notifier import Notifier, Posted, SlackNotifier
from bot.slack.render import SlackRenderer

BLOCKS = [{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]

RENDERER = SlackRenderer()


def rendered(post: OutboxMessage | PlannedPost) -> tuple[str, list[dict[str, Any]]]:
    """Return the text and blocks an outbox row or a planned post shows (rendered as delivered)."""
    payload = stored_payload(post.message) if isinstance(post, PlannedPost) else post.payload
    return render_payload(payload, RENDERER)


def delivery_edge(
    notifier: Notifier, renderer: Renderer = RENDERER, find_posted: FindPosted | None = None
) -> DeliveryEdge:
    """Return the delivery edge over this notifier (the Slack renderer, no history lookup)."""
    return DeliveryEdge(notifier, renderer, find_posted)


def put(
    session: Session,
    key: str,
    *,
    text: str,
    channel: str = "C1",
    kind: str = "test",
    thread_key: str | None = None,
) -> bool:
    """Enqueue one message with the test blocks."""
    return bool(
        enqueue_many(
            session, [PlannedPost(key, kind, channel, PreRendered(text, BLOCKS), thread_key)]
        )
    )


def put_one(factory: sessionmaker[Session], key: str, *, text: str, **fields: str) -> None:
    """Enqueue one message in its own session scope."""
    with session_scope(factory) as session:
        put(session, key, text=text, **fields)


def outbox_rows(factory: sessionmaker[Session]) -> dict[str, OutboxMessage]:
    """Return every outbox row by its dedupe key."""
    with session_scope(factory) as session:
        return {m.dedupe_key: m for m in session.scalars(select(OutboxMessage))}


def make_due(factory: sessionmaker[Session]) -> None:
    """Move the only outbox row's next attempt into the past."""
    with session_scope(factory) as session:
        row = session.scalars(select(OutboxMessage)).one()
        row.next_attempt_at = system_clock() - dt.timedelta(seconds=1)


def post_as_the_worker(
    client: WebClient, row: OutboxMessage, thread_ts: str | None = None
) -> Posted:
    """Post an outbox row with its key in the metadata, as the delivery worker does."""
    return SlackNotifier(client).post_with_metadata(
        row.channel,
        *rendered(row),
        thread_ts,
        {"event_type": METADATA_EVENT, "event_payload": {"key": row.dedupe_key}},
    )


def let_time_pass(factory: sessionmaker[Session], by: dt.timedelta) -> None:
    """Move every retry time and lease back by `by`: the database's clock moved on that much."""
    with session_scope(factory) as session:
        for row in session.scalars(
            select(OutboxMessage).where(OutboxMessage.next_attempt_at.is_not(None))
        ):
            assert row.next_attempt_at is not None
            row.next_attempt_at -= by
