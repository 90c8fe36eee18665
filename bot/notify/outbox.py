"""The outbox: record a Slack post before sending it, once per dedupe key, and find a post again.

A post is recorded (PlannedPost, enqueue) in the same transaction as whatever it announces, as a
typed message: the domain's message dataclass, by name, with its fields as JSON
(bot/notify/codec.py). bot/notify/delivery.py sends what is pending, rendering each message
with the Renderer the composition root hands it (bot/slack/render.py), and keeps the text and
blocks it posted with the message. A post recorded already rendered (PreRendered, and rows from
before messages were typed) is sent as it is. A post carries its dedupe key in the message
metadata, so HistoryLookup can tell whether an attempt whose outcome was lost did reach Slack.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import bindparam, column, func, select
from sqlalchemy.orm import Session

from bot.db.engine import dialect_insert
from bot.db.reading import dialect_name
from bot.db.tables import JSONType, OutboxStatus, outbox
from bot.notify.codec import decode, encode
from bot.slack.notifier import Posted

log = logging.getLogger(__name__)


METADATA_EVENT = "mlcost_outbox"


# a message's Slack text and blocks
Rendered = tuple[str, list[dict[str, Any]]]


class Renderer(Protocol):
    """Turns a domain message into Slack text and blocks; knows each message type by its name."""

    def __call__(self, message: Any) -> Rendered: ...

    def message_type(self, name: str) -> type: ...


@dataclass(frozen=True)
class PreRendered:
    """Text and blocks built already: recorded and sent as they are."""

    text: str
    blocks: list[dict[str, Any]]


@dataclass(frozen=True)
class PlannedPost:
    """A message ready for the outbox: a domain message (a dataclass), or PreRendered."""

    dedupe_key: str
    kind: str
    channel: str
    message: Any
    thread_key: str | None = None


def stored_payload(message: Any) -> dict[str, Any]:
    """Return what the outbox stores for a message: its type's name and fields, or text+blocks."""
    if isinstance(message, PreRendered):
        return {"text": message.text, "blocks": message.blocks}
    return {"message": type(message).__name__, "data": encode(message)}


def stored_message(payload: dict[str, Any], renderer: Renderer) -> Any:
    """Return the domain message a typed payload stores."""
    return decode(renderer.message_type(payload["message"]), payload["data"])


def render_payload(payload: dict[str, Any], renderer: Renderer | None) -> Rendered:
    """Return the text and blocks of a stored payload (typed messages rendered now)."""
    if "message" not in payload or "text" in payload:  # rendered already
        return str(payload.get("text") or ""), list(payload.get("blocks") or [])
    if renderer is None:
        raise RuntimeError(f"no renderer for a stored {payload['message']}")
    return renderer(stored_message(payload, renderer))


def enqueue_many(session: Session, posts: Iterable[PlannedPost]) -> set[str]:
    """Record posts unless one with the same key exists; return the keys that were new."""
    rows: dict[str, dict[str, Any]] = {}
    for p in posts:
        rows.setdefault(
            p.dedupe_key,
            {
                "dedupe_key": p.dedupe_key,
                "kind": p.kind,
                "channel": p.channel,
                "thread_key": p.thread_key,
                "payload": stored_payload(p.message),
                "status": OutboxStatus.PENDING,
                "attempts": 0,
            },
        )
    if not rows:
        return set()
    insert_fn = dialect_insert(session)
    values: Any
    if dialect_name(session) == "postgresql":
        # the rows as one JSON document, turned back into rows by PostgreSQL: one parameter
        # instead of eight a row in batches of VALUES lists, which psycopg parses client-side
        # (5,000 alerts of 1.3 KB: 0.34-0.41 s instead of 0.59-0.75 s)
        given = func.jsonb_to_recordset(bindparam("rows", type_=JSONType())).table_valued(
            *(column(name, outbox.c[name].type) for name in _ENQUEUED)
        )
        given = given.render_derived(name="given", with_types=True)
        statement = insert_fn(outbox).from_select(
            list(_ENQUEUED), select(*(given.c[name] for name in _ENQUEUED))
        )
        values = {"rows": list(rows.values())}
    else:
        # one statement for many parameter sets: SQLAlchemy batches it ("insertmanyvalues")
        statement = insert_fn(outbox)
        values = list(rows.values())
    # RETURNING names the rows that were inserted, not the ones the conflict skipped
    statement = statement.on_conflict_do_nothing(index_elements=["dedupe_key"]).returning(
        outbox.c.dedupe_key
    )
    return set(session.connection().execute(statement, values).scalars())


# the columns a post is enqueued with; the others take their defaults
_ENQUEUED = ("dedupe_key", "kind", "channel", "thread_key", "payload", "status", "attempts")


def enqueue(
    *,
    session: Session,
    dedupe_key: str,
    kind: str,
    channel: str,
    text: str,
    blocks: list[dict[str, Any]],
    thread_key: str | None = None,
) -> bool:
    """Record a post unless one with the same key exists; return whether it was new."""
    post = PlannedPost(dedupe_key, kind, channel, PreRendered(text, blocks), thread_key)
    return bool(enqueue_many(session, [post]))


# Where an earlier attempt posted a message: (channel, dedupe key, posted no earlier than, the
# thread's parent ts for a reply) -> the post, or None when not found.
FindPosted = Callable[[str, str, dt.datetime, str | None], Posted | None]


class HistoryLookup:
    """Find an already-posted message by its dedupe key (for posts whose outcome is unknown).

    A top-level post is looked for in conversations.history, a thread reply in
    conversations.replies of its parent (history lists no replies); both are read page by page.
    Needs channels:history and groups:history; for DMs (a user ID as the channel) im:write to
    open the DM and im:history to read it.
    """

    PAGE_LIMIT = 200
    MAX_PAGES = 50

    def __init__(self, client: Any) -> None:
        self.client = client

    def __call__(
        self, channel: str, key: str, since: dt.datetime, thread_ts: str | None = None
    ) -> Posted | None:
        if channel[:1] in ("U", "W"):
            # posted to a user ID (a DM): its history lives under the DM's own ID
            opened = self.client.conversations_open(users=channel)
            channel = str(opened["channel"]["id"])
        oldest = f"{since.timestamp():.6f}"
        if thread_ts is None:
            messages = self._messages(
                self.client.conversations_history, channel=channel, oldest=oldest
            )
        else:
            messages = self._messages(
                self.client.conversations_replies, channel=channel, ts=thread_ts, oldest=oldest
            )
        for message in messages:
            metadata = message.get("metadata") or {}
            if (
                metadata.get("event_type") == METADATA_EVENT
                and (metadata.get("event_payload") or {}).get("key") == key
            ):
                return Posted(channel=channel, ts=str(message["ts"]))
        return None

    def _messages(self, method: Callable[..., Any], **params: Any) -> Iterator[dict[str, Any]]:
        cursor: str | None = None
        for _ in range(self.MAX_PAGES):
            response = method(
                include_all_metadata=True, limit=self.PAGE_LIMIT, cursor=cursor, **params
            )
            yield from response.get("messages") or []
            cursor = (response.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                return
        log.warning(
            "history of %s not read to the end (%d pages)", params["channel"], self.MAX_PAGES
        )


def planned_post(
    dedupe_key: str, kind: str, channel: str, message: Any, thread_key: str | None = None
) -> PlannedPost:
    """Return a planned message as the post the outbox records."""
    return PlannedPost(dedupe_key, kind, channel, message, thread_key)


def enqueue_message(
    *,
    session: Session,
    dedupe_key: str,
    kind: str,
    channel: str,
    message: Any,
    thread_key: str | None = None,
) -> bool:
    """Record a message in the outbox unless its key exists; return whether it was new."""
    post = planned_post(dedupe_key, kind, channel, message, thread_key)
    return bool(enqueue_many(session, [post]))
