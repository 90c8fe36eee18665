"""A button's post, as the outbox recorded it: a click's payload names a post and nothing else.

Slack signs what it carries back, but a button's value or a modal's private_metadata is ours to
read only as a pointer: the scope, period, amounts and the channel a reply goes to are read
here, from the outbox's record of what mlcost posted.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.schema import OutboxMessage
from bot.errors import NotFoundError

NOT_OURS = "That button is not on a post mlcost made; nothing was changed."


def find_post(
    session: Session, *, key: str | None = None, channel: str = "", ts: str = ""
) -> OutboxMessage:
    """Return the delivered post with this outbox key (else the one at channel and ts)."""
    query = select(OutboxMessage).where(OutboxMessage.slack_ts.is_not(None))
    if key:
        query = query.where(OutboxMessage.dedupe_key == key)
    elif channel and ts:  # a post made before its buttons carried the key
        query = query.where(OutboxMessage.slack_channel == channel, OutboxMessage.slack_ts == ts)
    else:
        raise NotFoundError(NOT_OURS)
    post = session.scalars(query).first()
    if post is None:
        raise NotFoundError(NOT_OURS)
    return post


def posted_button_value(post: OutboxMessage, action_id: str) -> dict[str, Any]:
    """Return the value the post's button `action_id` carried when mlcost posted it."""
    for block in (post.payload or {}).get("blocks") or []:
        for element in block.get("elements") or [] if block.get("type") == "actions" else []:
            if element.get("action_id") == action_id:
                value = json.loads(element.get("value") or "{}")
                return value if isinstance(value, dict) else {}
    raise NotFoundError(NOT_OURS)
