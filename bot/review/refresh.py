"""Show recorded decisions in the posted review messages (chat.update, idempotent)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from bot.db.engine import session_scope
from bot.db.schema import Review, ReviewItem
from bot.notify.outbox import Renderer
from bot.review.decisions import load_item, lock_review
from bot.review.threads import item_message, parent_message, sync_message_ts
from bot.slack.errors import describe, is_permanent, send_shrinking, slack_error, status_code
from bot.slack.guard import MessageTooLarge
from bot.slack.notifier import SLACK_FAILURES, Notifier

log = logging.getLogger(__name__)


REFRESH_ROUNDS = 5


# what a thread refresh raises when Slack refuses or cannot be reached, or the message is too large
REFRESH_FAILURES: tuple[type[Exception], ...] = (*SLACK_FAILURES, MessageTooLarge)


def refresh_messages(
    *,
    session_factory: sessionmaker[Session],
    notifier: Notifier,
    renderer: Renderer,
    item_id: int,
    currency: str,
) -> bool:
    """Show the committed decisions in the item's message and its review's parent message.

    Each round renders in a fresh transaction and calls Slack outside it; then, with the review
    locked, it checks that the review's version did not change meanwhile. If it did, the messages
    are rendered again. The item's refresh flag is cleared only by a round whose updates all
    succeeded and that found the version unchanged; return whether one did. Slack errors
    propagate, after the item is marked (see below).

    Invariant: once no refresh is in flight, each of the review's messages shows the committed
    state, or an item whose refresh re-renders it is flagged (refresh_pending; the refresh job
    retries it), or Slack refused it for good (refresh_error). Rule: a refresh that does not end
    with a confirmed round (an update failed, or its rounds ran out) marks its item pending and
    bumps the review's version, under the review's lock. Why that is enough: take the last update
    to land on a message, sent by refresh R. If R ended confirmed, nothing was committed between
    its render and its check. Otherwise R's mark comes after that update landed: it is flagged,
    and a refresh that clears the flag must have rendered after the mark (the bump makes any
    earlier render fail its check and render again), so its own updates land later, which
    contradicts R's being last. A decision committed later flags its own item. Limits: an update
    whose answer was lost (a timeout) and that Slack applies only after a later refresh's
    updates, and a process killed between a stale update and its mark, are not covered.
    """
    try:
        for _ in range(REFRESH_ROUNDS):
            shown = _render_round(session_factory, renderer, item_id, currency)
            # a message Slack refuses as too large is shown shrunk (once per update)
            if shown.item_ts and shown.item:
                _update(notifier, shown.channel, shown.item_ts, *shown.item)
            if shown.parent_ts and shown.parent:
                _update(notifier, shown.channel, shown.parent_ts, *shown.parent)
            if _confirm_round(session_factory, item_id, shown):
                return True
            # a decision landed after this round rendered: show it too
    except BaseException:  # Slack errors, a bug in rendering, an interrupt: whatever ends it
        _mark_unconfirmed(session_factory, item_id)
        raise
    log.warning("review item %d: decisions kept landing during its refresh; retried later", item_id)
    _mark_unconfirmed(session_factory, item_id)
    return False


@dataclass
class _Round:
    """What one refresh round rendered, at which review version, for which messages."""

    version: int | None
    review_id: int
    channel: str
    item_ts: str | None
    parent_ts: str | None
    item: tuple[str, list[dict[str, Any]]] | None
    parent: tuple[str, list[dict[str, Any]]] | None


def _render_round(
    session_factory: sessionmaker[Session], renderer: Renderer, item_id: int, currency: str
) -> _Round:
    """Render the item's message and its review's parent message in a fresh transaction."""
    with session_scope(session_factory) as session:
        # the version is read before the rows it stands for: PostgreSQL reads each statement
        # at its own moment, so rows read later are at least this new (a newer one is
        # noticed by the check in _confirm_round and rendered again)
        version = session.scalar(
            select(Review.version).join(ReviewItem).where(ReviewItem.id == item_id)
        )
        item = load_item(session, item_id)
        review = item.review
        sync_message_ts(session=session, reviews=[review])
        return _Round(
            version=version,
            review_id=review.id,
            channel=review.channel,
            item_ts=item.message_ts,
            parent_ts=review.parent_ts,
            item=renderer(item_message(item, currency)) if item.message_ts else None,
            parent=renderer(parent_message(review, currency)) if review.parent_ts else None,
        )


def _confirm_round(session_factory: sessionmaker[Session], item_id: int, shown: _Round) -> bool:
    """Clear the item's refresh flag if the review's version is unchanged; return whether it is."""
    with session_scope(session_factory) as session:
        lock_review(session, shown.review_id)  # PostgreSQL: no decision lands until this commits
        if shown.item_ts and shown.parent_ts:
            unchanged = select(Review.id).where(
                Review.id == shown.review_id, Review.version == shown.version
            )
            session.execute(
                update(ReviewItem)
                .where(ReviewItem.id == item_id, ReviewItem.review_id.in_(unchanged))
                .values(refresh_pending=False)
                .execution_options(synchronize_session=False)
            )
        # read after that write: on SQLite the write lock it took keeps this read current
        current = session.scalar(select(Review.version).where(Review.id == shown.review_id))
        return bool(current == shown.version)


def _mark_unconfirmed(session_factory: sessionmaker[Session], item_id: int) -> None:
    """Flag the item's thread for another refresh; make refreshes in flight render again.

    The version bump takes the review's row lock (PostgreSQL) or SQLite's write lock, so it is
    ordered against every decision and every refresh's check (see refresh_messages).
    """
    try:
        with session_scope(session_factory) as session:
            review_id = (
                select(ReviewItem.review_id).where(ReviewItem.id == item_id).scalar_subquery()
            )
            session.execute(
                update(Review)
                .where(Review.id == review_id)
                .values(version=Review.version + 1)
                .execution_options(synchronize_session=False)
            )
            session.execute(
                update(ReviewItem)
                .where(ReviewItem.id == item_id)
                .values(refresh_pending=True)
                .execution_options(synchronize_session=False)
            )
    except Exception:  # the database is unreachable too; the refresh's own error is raised
        log.exception("review item %d: could not flag its thread for another refresh", item_id)


def _update(
    notifier: Notifier, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]
) -> None:
    send_shrinking(lambda t, b: notifier.update(channel, ts, t, b), text, blocks)


@dataclass
class RefreshReport:
    """What a refresh round did with each review item waiting for its thread update."""

    refreshed: list[int] = field(default_factory=list)
    retrying: list[int] = field(default_factory=list)  # still flagged; the next round tries again
    given_up: list[int] = field(default_factory=list)  # refused for good; the error is recorded


def refresh_pending_messages(
    *,
    session_factory: sessionmaker[Session],
    notifier: Notifier,
    renderer: Renderer,
    currency: str,
    limit: int = 50,
) -> RefreshReport:
    """Retry the Slack updates of decisions whose messages were not refreshed.

    Each item fails alone. A transient failure (5xx, network) keeps its flag for the next round;
    a rate limit also ends this round, as Slack asks. A permanent one (msg_too_long,
    channel_not_found, a message over Slack's limits, ...) is recorded on the item, whose flag is
    cleared so it is not retried run after run; a new decision on the item tries again.
    """
    report = RefreshReport()
    with session_scope(session_factory) as session:
        ids = list(
            session.scalars(
                select(ReviewItem.id)
                .where(ReviewItem.refresh_pending.is_(True))
                .order_by(ReviewItem.decided_at, ReviewItem.id)
                .limit(limit)
            )
        )
    for index, item_id in enumerate(ids):
        try:
            shown = refresh_messages(
                session_factory=session_factory,
                notifier=notifier,
                renderer=renderer,
                item_id=item_id,
                currency=currency,
            )
        except REFRESH_FAILURES as exc:
            error = slack_error(exc)
            if is_permanent(exc):
                log.error(
                    "review item %d: Slack refused its thread update for good: %s", item_id, exc
                )
                _give_up_refresh(session_factory, item_id, describe(exc))
                report.given_up.append(item_id)
                continue
            log.warning("review item %d: message not refreshed yet: %s", item_id, exc)
            report.retrying.append(item_id)
            if error == "ratelimited" or status_code(exc) == 429:
                report.retrying += ids[index + 1 :]
                break
            continue
        except Exception:  # a bug in one item's rendering must not hold up the others
            log.exception("review item %d: thread refresh failed", item_id)
            report.retrying.append(item_id)
            continue
        (report.refreshed if shown else report.retrying).append(item_id)
    return report


def _give_up_refresh(session_factory: sessionmaker[Session], item_id: int, error: str) -> None:
    """Record why an item's thread cannot be updated and stop retrying it."""
    with session_scope(session_factory) as session:
        session.execute(
            update(ReviewItem)
            .where(ReviewItem.id == item_id)
            .values(refresh_pending=False, refresh_error=error[:1000])
            .execution_options(synchronize_session=False)
        )
