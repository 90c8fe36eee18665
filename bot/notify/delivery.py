"""Deliver the outbox: send each recorded Slack post once, retry what failed.

Delivery never holds a database lock across the network call. A worker claims a message (status
`sending`, a lease, attempts + 1) in one short transaction, posts it with the dedupe key in the
message metadata, and records the result in another. The lease runs from the clock at claim
time. A message whose worker died mid-post, or whose post failed in a way that may still have
posted (a timeout, a 5xx), is retried; before posting again the worker looks for the key in the
channel's history (a thread reply: in its thread's replies), so a post that did reach Slack is
not sent twice. What a failed lookup means depends on why it failed:

- it cannot read the channel for good (not_in_channel on a public channel posted to through
  chat:write.public, missing_scope, channel_not_found, thread_not_found, or any error not known
  to be transient): the outcome is "unknown", a warning is logged and the message is posted,
  which may double a post whose outcome was lost, but never drops one;
- it failed for now (HTTP 429, 5xx, `ratelimited`, `internal_error`, `fatal_error`,
  `service_unavailable`, `request_timeout`, a timeout or network error): nothing is posted. The
  message goes back to pending, due after Retry-After or the backoff, and the round ends as after
  a transient post failure. The next attempt looks again first (the lookup runs from the second
  attempt on, and attempts only grow), so a post is never doubled because Slack was busy. A
  lookup that keeps failing keeps the message retrying with a growing backoff (at most an hour),
  where /healthz shows it in the outbox backlog.

A thread reply is claimed only once its parent has a ts; until then it waits without taking a
place in the claim window. When a parent fails for good, its replies fail with it (naming the
parent and its reason).
"""

from __future__ import annotations

import datetime as dt
import http.client
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy import Select, exists, or_, select, update
from sqlalchemy.orm import Session, aliased, sessionmaker

from bot.db.engine import session_scope
from bot.db.schema import OutboxMessage, OutboxStatus
from bot.notify.outbox import METADATA_EVENT, FindPosted
from bot.slack.guard import MessageTooLarge
from bot.slack.notifier import Notifier, Posted

log = logging.getLogger(__name__)


LEASE = dt.timedelta(minutes=2)


# Slack errors that no retry will fix: the message is marked failed and logged.
PERMANENT_ERRORS = frozenset(
    {
        "channel_not_found",
        "is_archived",
        "not_in_channel",
        "invalid_blocks",
        "invalid_blocks_format",
        "msg_too_long",
        "no_text",
        "invalid_metadata_format",
        "invalid_metadata_schema",
        "metadata_too_large",
        "too_many_attachments",
    }
)


# History-lookup errors that mean "Slack cannot answer now", besides 429, 5xx and network errors:
# the lookup is tried again later instead of being taken as "not found".
TRANSIENT_LOOKUP_ERRORS = frozenset(
    {
        "ratelimited",
        "internal_error",
        "fatal_error",
        "service_unavailable",
        "request_timeout",
    }
)


@dataclass
class DeliveryReport:
    delivered: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # will be retried
    recovered: list[str] = field(default_factory=list)  # found already posted; not re-sent
    dead: list[str] = field(default_factory=list)  # permanently undeliverable


def _retry_delay(exc: Exception, attempts: int) -> dt.timedelta:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    retry_after = headers.get("Retry-After") or headers.get("retry-after")
    if retry_after:
        try:
            return dt.timedelta(seconds=max(1, int(retry_after)))
        except ValueError:
            pass
    return dt.timedelta(seconds=min(3600, 30 * 2 ** min(attempts, 7)))


class LookupDeferred(Exception):
    """A history lookup failed for now: whether an earlier attempt posted is not known yet."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(
            f"could not look for an earlier post, will look again: {_error_text(cause)}"
        )
        self.cause = cause


def _is_transient_lookup_error(exc: Exception) -> bool:
    if isinstance(exc, OSError | http.client.HTTPException):  # timeouts, URLError, resets
        return True
    response: Any = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and (status == 429 or status >= 500):
        return True
    error = response.get("error") if response is not None and hasattr(response, "get") else None
    return error in TRANSIENT_LOOKUP_ERRORS


def _is_permanent(exc: Exception) -> bool:
    if isinstance(exc, MessageTooLarge):
        return True
    response: Any = getattr(exc, "response", None)
    error = response.get("error") if response is not None and hasattr(response, "get") else None
    return error in PERMANENT_ERRORS


def _error_text(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    code = getattr(response, "status_code", None)
    return f"{type(exc).__name__}{f' ({code})' if code else ''}: {str(exc)[:300]}"


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _fixed(at: dt.datetime) -> Callable[[], dt.datetime]:
    return lambda: at


def deliver_pending(
    *,
    session_factory: sessionmaker[Session],
    notifier: Notifier,
    now: dt.datetime | None = None,
    clock: Callable[[], dt.datetime] | None = None,
    find_posted: FindPosted | None = None,
    limit: int = 200,
    kinds: tuple[str, ...] | None = None,
    lease: dt.timedelta = LEASE,
) -> DeliveryReport:
    """Deliver due messages one by one; a failure leaves the message for the next cycle.

    A transient failure (429, 5xx, network) ends this round: Slack is unwell or asks us to wait,
    and the next cycle retries after Retry-After (or a backoff). So does a history lookup that
    fails for now: the message is not posted until a lookup has answered. A permanent failure
    (unknown channel, invalid blocks) marks the message failed and moves on.

    The clock is read at each claim (the lease), failure (the retry time) and delivery, so a
    caller that took a while before delivering never claims with an already-expired lease. A
    fixed `now` (tests, the demo) stands for a clock that does not move; with neither, the
    system clock is used.
    """
    if clock is None:
        clock = _utcnow if now is None else _fixed(now)
    elif now is not None:
        raise TypeError("deliver_pending takes now or clock, not both")
    report = DeliveryReport()
    with session_scope(session_factory) as session:
        report.dead += fail_orphaned_replies(session)
    for _ in range(limit):
        claim = _claim(session_factory, clock(), kinds, lease)
        if claim is None:
            break
        try:
            posted = _send(notifier, find_posted, claim, report)
        except Exception as exc:
            permanent, orphans = _record_failure(session_factory, claim, exc, clock)
            if permanent:
                report.dead.append(claim.key)
                report.dead += orphans
                continue
            report.failed.append(claim.key)
            break
        with session_scope(session_factory) as session:
            row = session.get(OutboxMessage, claim.id)
            if row is not None:
                row.status = OutboxStatus.DELIVERED
                row.delivered_at = clock()
                row.slack_ts = posted.ts
                row.slack_channel = posted.channel
                row.last_error = None
        report.delivered.append(claim.key)
    return report


class Claim(NamedTuple):
    """A message this worker claimed: what to post, where, and which attempt this is."""

    id: int
    key: str
    channel: str
    payload: dict[str, Any]
    thread_ts: str | None
    attempts: int
    created_at: dt.datetime


def _send(
    notifier: Notifier, find_posted: FindPosted | None, claim: Claim, report: DeliveryReport
) -> Posted:
    """Post a claimed message, unless a lookup finds an earlier attempt's post (recovered)."""
    if claim.attempts > 1 and find_posted is not None:
        since = claim.created_at - dt.timedelta(minutes=1)
        posted = _look_up(find_posted, claim.channel, claim.key, since, claim.thread_ts)
        if posted is not None:
            report.recovered.append(claim.key)
            return posted
    text, blocks = claim.payload["text"], claim.payload["blocks"]
    return _post(notifier, claim.channel, text, blocks, claim.thread_ts, claim.key)


def _record_failure(
    session_factory: sessionmaker[Session],
    claim: Claim,
    exc: Exception,
    clock: Callable[[], dt.datetime],
) -> tuple[bool, list[str]]:
    """Record why a claimed message was not delivered; return (permanent, orphaned replies)."""
    key, attempts = claim.key, claim.attempts
    permanent = _is_permanent(exc)
    if isinstance(exc, LookupDeferred):  # wait as the failed lookup was told
        reason, delay_of = str(exc), exc.cause
    else:
        reason, delay_of = _error_text(exc), exc
    log.log(
        logging.ERROR if permanent else logging.WARNING,
        "outbox %s not delivered (attempt %d%s): %s",
        key,
        attempts,
        ", giving up" if permanent else "",
        reason,
    )
    orphans: list[str] = []
    with session_scope(session_factory) as session:
        row = session.get(OutboxMessage, claim.id)
        if row is not None and (row.status, row.attempts) != (OutboxStatus.SENDING, attempts):
            # our lease ran out and another worker claimed (or delivered) the message:
            # its outcome stands; writing ours could send the message again
            log.warning(
                "outbox %s: claimed again while attempt %d ran; keeping %s",
                key,
                attempts,
                row.status,
            )
            row = None
            permanent = False
        if row is not None:
            row.status = OutboxStatus.FAILED if permanent else OutboxStatus.PENDING
            row.last_error = reason
            row.next_attempt_at = None if permanent else clock() + _retry_delay(delay_of, attempts)
        if permanent:
            session.flush()
            orphans = fail_orphaned_replies(session)
    return permanent, orphans


def _look_up(
    find_posted: FindPosted, channel: str, key: str, since: dt.datetime, thread_ts: str | None
) -> Posted | None:
    """Return where an earlier attempt posted the message; None when not found or unknown.

    Raise LookupDeferred when the lookup failed for now (429, 5xx, network): posting then could
    double a post that did reach Slack, so the caller must try again later.
    """
    try:
        return find_posted(channel, key, since, thread_ts)
    except Exception as exc:
        if _is_transient_lookup_error(exc):
            raise LookupDeferred(exc) from exc
        # the channel cannot be read (no history scope, not a member of a public channel posted
        # to through chat:write.public): that says nothing about the post, so post
        log.warning(
            "outbox %s: could not look for an earlier post, posting: %s", key, _error_text(exc)
        )
        return None


def fail_orphaned_replies(session: Session) -> list[str]:
    """Mark failed every undelivered thread reply whose parent failed for good; return their keys.

    A reply cannot be posted without its parent's ts, so it shares the parent's fate (and reason).
    """
    parent = aliased(OutboxMessage)
    failed: list[str] = []
    while True:  # a failed reply may itself be a parent
        found = session.execute(
            select(OutboxMessage, parent.dedupe_key, parent.last_error)
            .join(parent, parent.dedupe_key == OutboxMessage.thread_key)
            .where(
                parent.status == OutboxStatus.FAILED,
                OutboxMessage.status.in_((OutboxStatus.PENDING, OutboxStatus.SENDING)),
            )
        ).all()
        if not found:
            return failed
        for row, parent_key, reason in found:
            row.status = OutboxStatus.FAILED
            row.next_attempt_at = None
            row.last_error = f"thread parent {parent_key} failed: {reason or 'unknown'}"[:2000]
            log.error("outbox %s not delivered: %s", row.dedupe_key, row.last_error)
            failed.append(row.dedupe_key)
        session.flush()


def _post(
    notifier: Notifier,
    channel: str,
    text: str,
    blocks: list[dict[str, Any]],
    thread_ts: str | None,
    key: str,
) -> Posted:
    post_with_metadata = getattr(notifier, "post_with_metadata", None)
    if post_with_metadata is not None:
        metadata = {"event_type": METADATA_EVENT, "event_payload": {"key": key}}
        result: Posted = post_with_metadata(channel, text, blocks, thread_ts, metadata)
        return result
    return notifier.post(channel, text, blocks, thread_ts=thread_ts)


def _due(now: dt.datetime, kinds: tuple[str, ...] | None) -> Select[OutboxMessage]:
    """Select the next messages due (pending, or sending with an expired lease) and ready."""
    posted_parent = aliased(OutboxMessage)
    due = or_(
        (OutboxMessage.status == OutboxStatus.PENDING)
        & (or_(OutboxMessage.next_attempt_at.is_(None), OutboxMessage.next_attempt_at <= now)),
        (OutboxMessage.status == OutboxStatus.SENDING) & (OutboxMessage.next_attempt_at <= now),
    )
    # a thread reply is ready once its parent is posted; one that waits must not take a place
    # in the window, or enough of them would starve every other message
    ready = or_(
        OutboxMessage.thread_key.is_(None),
        exists().where(
            posted_parent.dedupe_key == OutboxMessage.thread_key,
            posted_parent.slack_ts.is_not(None),
        ),
    )
    query = select(OutboxMessage).where(due, ready).order_by(OutboxMessage.id).limit(20)
    if kinds:
        query = query.where(OutboxMessage.kind.in_(kinds))
    return query


def _claim(
    factory: sessionmaker[Session],
    now: dt.datetime,
    kinds: tuple[str, ...] | None,
    lease: dt.timedelta,
) -> Claim | None:
    """Claim the next due message (a lease, attempts + 1), or return None when none is due."""
    with session_scope(factory) as session:
        query = _due(now, kinds)
        if session.get_bind().dialect.name == "postgresql":
            query = query.with_for_update(skip_locked=True)
        for row in session.scalars(query).all():
            thread_ts = None
            if row.thread_key:
                parent = session.scalars(
                    select(OutboxMessage).where(OutboxMessage.dedupe_key == row.thread_key)
                ).first()
                if parent is None or parent.slack_ts is None:
                    continue  # unreachable: the query only returns replies to posted parents
                thread_ts = parent.slack_ts
            # Compare-and-set on (status, attempts): of two workers that read the same row (SQLite
            # has no SKIP LOCKED), only one wins the claim.
            claimed = session.execute(
                update(OutboxMessage)
                .where(
                    OutboxMessage.id == row.id,
                    OutboxMessage.status == row.status,
                    OutboxMessage.attempts == row.attempts,
                )
                .values(
                    status=OutboxStatus.SENDING,
                    attempts=row.attempts + 1,
                    next_attempt_at=now + lease,
                )  # the lease: re-claimable if we die
                .execution_options(synchronize_session=False)
            )
            if getattr(claimed, "rowcount", 0) != 1:
                continue
            return Claim(
                row.id,
                row.dedupe_key,
                row.channel,
                dict(row.payload),
                thread_ts,
                row.attempts + 1,
                row.created_at,
            )
    return None
