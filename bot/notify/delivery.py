"""Deliver the outbox: send each recorded Slack post once, retry what failed.

Delivery never holds a database lock across the network call. A worker claims a message (status
`sending`, a lease, attempts + 1) in one short transaction, posts it with the dedupe key in the
message metadata, and records the result in another. Leases and retry times come from the
database's clock, read in the transaction that writes or compares them: processes on hosts whose
clocks disagree see the same leases, so none re-claims a message another is still posting. Every
delivery path leases for MLCOST_OUTBOX_LEASE_SECONDS (`outbox_lease`).

A message whose worker died mid-post, or whose post failed in a way that may still have posted
(a timeout, a 5xx), is retried; before posting again the worker looks for the key in the
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

A typed message is rendered (by the `DeliveryEdge` the composition root built) when it is sent, and
the text and blocks rendered are kept with the delivered row: what a button's post showed.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy import Select, exists, or_, select, update
from sqlalchemy.orm import Session, aliased, sessionmaker

from bot.config import DeliverySettings
from bot.db.engine import database_now, session_scope
from bot.db.reading import dialect_name
from bot.db.schema import OutboxMessage
from bot.db.tables import OutboxStatus
from bot.notify.outbox import METADATA_EVENT, FindPosted, Rendered, Renderer, render_payload
from bot.slack.errors import describe, is_permanent, is_transient, send_shrinking
from bot.slack.notifier import Notifier, Posted

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OutboxTiming:
    """How long a claimed message is held before another worker may claim it (`lease`), and
    the first retry's wait after a failure without Retry-After (`backoff`; it doubles with each
    attempt, up to an hour)."""

    lease: dt.timedelta = dt.timedelta(minutes=2)
    backoff: dt.timedelta = dt.timedelta(seconds=30)


def outbox_timing(settings: DeliverySettings) -> OutboxTiming:
    """Return the outbox's lease and backoff as configured."""
    return OutboxTiming(
        lease=dt.timedelta(seconds=settings.outbox_lease_seconds),
        backoff=dt.timedelta(seconds=settings.outbox_backoff_seconds),
    )


@dataclass(frozen=True)
class DeliveryEdge:
    """What delivering the outbox talks through, built once by the composition root.

    `notifier` posts and updates, `renderer` turns typed messages into Block Kit, `find_posted`
    looks for an earlier attempt's post (None: post again without looking).
    """

    notifier: Notifier
    renderer: Renderer
    find_posted: FindPosted | None = None


@dataclass
class DeliveryReport:
    delivered: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # will be retried
    recovered: list[str] = field(default_factory=list)  # found already posted; not re-sent
    dead: list[str] = field(default_factory=list)  # permanently undeliverable


def _retry_delay(exc: Exception, attempts: int, backoff: dt.timedelta) -> dt.timedelta:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    retry_after = headers.get("Retry-After") or headers.get("retry-after")
    if retry_after:
        try:
            return dt.timedelta(seconds=max(1, int(retry_after)))
        except ValueError:
            pass
    return min(dt.timedelta(hours=1), backoff * 2 ** min(attempts, 7))


class LookupDeferred(Exception):
    """A history lookup failed for now: whether an earlier attempt posted is not known yet."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(f"could not look for an earlier post, will look again: {describe(cause)}")
        self.cause = cause


# The time a delivery step reads in its transaction: the database's clock, or a fixed time.
TimeIn = Callable[[Session], dt.datetime]


def deliver_pending(
    *,
    session_factory: sessionmaker[Session],
    edge: DeliveryEdge,
    now: dt.datetime | None = None,
    limit: int = 200,
    kinds: tuple[str, ...] | None = None,
    timing: OutboxTiming = OutboxTiming(),
) -> DeliveryReport:
    """Deliver due messages one by one; a failure leaves the message for the next cycle.

    A transient failure (429, 5xx, network) ends this round: Slack is unwell or asks us to wait,
    and the next cycle retries after Retry-After (or a backoff). So does a history lookup that
    fails for now: the message is not posted until a lookup has answered. A permanent failure
    (unknown channel, invalid blocks) marks the message failed and moves on.

    The database's clock is read at each claim (the lease), failure (the retry time) and
    delivery, so neither a host whose clock drifted nor a caller that took a while before
    delivering claims with a lease that already ran out. A fixed `now` (tests, the demo) stands
    for a clock that does not move.
    """
    time_in: TimeIn = database_now if now is None else (lambda _session: now)
    report = DeliveryReport()
    with session_scope(session_factory) as session:
        report.dead += fail_orphaned_replies(session)
    for _ in range(limit):
        claim = _claim(session_factory, time_in, kinds, timing.lease)
        if claim is None:
            break
        try:
            posted, shown = _send(edge, claim, report)
        except Exception as exc:
            permanent, orphans = _record_failure(
                session_factory, claim, exc, time_in, timing.backoff
            )
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
                row.delivered_at = time_in(session)
                row.slack_ts = posted.ts
                row.slack_channel = posted.channel
                row.last_error = None
                if shown is not None:  # a typed message: keep what was posted with it
                    row.payload = {**row.payload, "text": shown[0], "blocks": shown[1]}
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
    edge: DeliveryEdge, claim: Claim, report: DeliveryReport
) -> tuple[Posted, Rendered | None]:
    """Post a claimed message, unless a lookup finds an earlier attempt's post (recovered).

    Return where it is and, for a typed message, the text and blocks it was rendered as.
    """
    typed = "text" not in claim.payload
    rendered = render_payload(claim.payload, edge.renderer) if typed else None
    if claim.attempts > 1 and edge.find_posted is not None:
        since = claim.created_at - dt.timedelta(minutes=1)
        posted = _look_up(edge.find_posted, claim.channel, claim.key, since, claim.thread_ts)
        if posted is not None:
            report.recovered.append(claim.key)
            return posted, rendered
    text, blocks = rendered or (claim.payload["text"], claim.payload["blocks"])
    posted = send_shrinking(
        lambda t, b: _post(edge.notifier, claim.channel, t, b, claim.thread_ts, claim.key),
        text,
        blocks,
    )
    return posted, rendered


def _record_failure(
    session_factory: sessionmaker[Session],
    claim: Claim,
    exc: Exception,
    time_in: TimeIn,
    backoff: dt.timedelta,
) -> tuple[bool, list[str]]:
    """Record why a claimed message was not delivered; return (permanent, orphaned replies)."""
    key, attempts = claim.key, claim.attempts
    permanent = is_permanent(exc)
    if isinstance(exc, LookupDeferred):  # wait as the failed lookup was told
        reason, delay_of = str(exc), exc.cause
    else:
        reason, delay_of = describe(exc), exc
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
            row.next_attempt_at = (
                None if permanent else time_in(session) + _retry_delay(delay_of, attempts, backoff)
            )
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
        if is_transient(exc):
            raise LookupDeferred(exc) from exc
        # the channel cannot be read (no history scope, not a member of a public channel posted
        # to through chat:write.public): that says nothing about the post, so post
        log.warning(
            "outbox %s: could not look for an earlier post, posting: %s", key, describe(exc)
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
    time_in: TimeIn,
    kinds: tuple[str, ...] | None,
    lease: dt.timedelta,
) -> Claim | None:
    """Claim the next due message (a lease, attempts + 1), or return None when none is due."""
    with session_scope(factory) as session:
        now = time_in(session)  # the lease is read and written by the same clock
        query = _due(now, kinds)
        if dialect_name(session) == "postgresql":
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
