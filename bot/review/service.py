"""The monthly kill-or-keep review: open it per team, record decisions, remind, summarise.

Every post goes through the outbox with a dedupe key per (month, team[, model]), so a review is
posted once however often the job or the command runs, across restarts and replicas. A review's
rows and its outbox messages are created in the same transaction. Decisions update the posted
messages in place (chat.update), which is idempotent.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload, sessionmaker
from sqlalchemy.orm.attributes import set_committed_value

from bot.config import Settings
from bot.db.engine import dialect_insert, session_scope
from bot.db.schema import AuditLog, MLModel, OutboxMessage, Review, ReviewItem, Team
from bot.economics.unit_costs import economics_for, verdict_rules
from bot.errors import MlcostError, NotFoundError, PermissionDenied, UsageError
from bot.notify.messages import (
    DECISIONS,
    DecisionState,
    ReviewItemMessage,
    ReviewParentMessage,
    ReviewReminderMessage,
)
from bot.notify.outbox import PERMANENT_ERRORS, FindPosted, deliver_pending
from bot.notify.render import enqueue_message, render
from bot.periods import Period, previous_month
from bot.registry.catalog import can_manage_model, is_admin, model_owner_ids
from bot.review.signoff import signoff_counts
from bot.slack.guard import MessageTooLarge
from bot.slack.notifier import SLACK_FAILURES, Notifier

log = logging.getLogger(__name__)

REVIEW_KINDS = ("review.parent", "review.item", "review.reminder")


def parent_key(month: str, team: str) -> str:
    """Return the outbox key of a team's review parent message."""
    return f"review:{month}:{team}"


def item_key(month: str, team: str, model: str) -> str:
    """Return the outbox key of a model's message in the review thread."""
    return f"review:{month}:{team}:model:{model}"


def reminder_key(month: str, team: str) -> str:
    """Return the outbox key of a review's one reminder."""
    return f"review:{month}:{team}:reminder"


def chart_key(month: str, team: str) -> str:
    """Return the key that claims a review's chart upload."""
    return f"review:{month}:{team}:chart"


def state_of(item: ReviewItem) -> DecisionState:
    """Return what a review item's message shows about its decision."""
    return DecisionState(item.id, item.decision, item.decided_by, item.decided_at, item.reason)


def item_message(item: ReviewItem, currency: str) -> ReviewItemMessage:
    """Return a review item's message: its snapshot and decision."""
    return ReviewItemMessage(item.snapshot, state_of(item), currency)


def parent_message(review: Review, currency: str) -> ReviewParentMessage:
    """Return a review's parent message: its items' snapshots and decisions."""
    items = sorted(review.items, key=lambda i: i.id)
    return ReviewParentMessage(
        review.month, review.team_name, [(i.snapshot, state_of(i)) for i in items], currency
    )


def open_reviews(
    *,
    session: Session,
    month: Period,
    settings: Settings,
    now: dt.datetime,
    teams: set[str] | None = None,
) -> list[Review]:
    """Create each team's review of the month and enqueue its messages; return the new ones.

    A team gets a review when it has a channel and an active model with cost in the month.
    Existing reviews are left untouched.
    """
    previous = previous_month(month)
    economics = economics_for(
        session=session,
        period=month,
        previous=previous,
        rules=verdict_rules(settings),
        default_currency=settings.currency,
    )
    signoffs = signoff_counts(session=session, period=month)
    created: list[Review] = []
    query = select(Team).options(selectinload(Team.owners)).order_by(Team.name)
    for team in session.scalars(query):
        if teams is not None and team.name not in teams:
            continue
        models = session.scalars(
            select(MLModel)
            .where(MLModel.team_id == team.id, MLModel.status == "active")
            .options(selectinload(MLModel.owners), selectinload(MLModel.team))
            .order_by(MLModel.name)
        ).all()
        reviewed = [m for m in models if m.name in economics and economics[m.name].current.cost > 0]
        if not reviewed:
            continue
        if not team.channel:
            log.warning("team %s has no channel; its %s review is skipped", team.name, month.label)
            continue
        exists = session.scalars(
            select(Review.id).where(Review.month == month.label, Review.team_name == team.name)
        ).first()
        if exists is not None:
            continue
        review = Review(
            month=month.label,
            team_name=team.name,
            channel=team.channel,
            status="open",
            created_at=now,
        )
        try:
            with session.begin_nested():
                session.add(review)
                session.flush()
        except IntegrityError:  # another replica opened it a moment ago
            continue
        for model in reviewed:
            snapshot = economics[model.name].as_json()
            snapshot["owners"] = sorted(model_owner_ids(model))
            signed, weeks = signoffs.get(model.name, (0, 0))
            snapshot["signoffs"] = {"signed": signed, "weeks": weeks}
            review.items.append(ReviewItem(model_name=model.name, snapshot=snapshot))
        session.flush()
        key = parent_key(month.label, team.name)
        enqueue_message(
            session=session,
            dedupe_key=key,
            kind="review.parent",
            channel=team.channel,
            message=parent_message(review, settings.currency),
        )
        for item in sorted(review.items, key=lambda i: i.id):
            enqueue_message(
                session=session,
                dedupe_key=item_key(month.label, team.name, item.model_name),
                kind="review.item",
                channel=team.channel,
                message=item_message(item, settings.currency),
                thread_key=key,
            )
        session.add(
            AuditLog(
                actor="mlcost",
                action="review.open",
                target=key,
                detail={"models": [i.model_name for i in review.items]},
            )
        )
        created.append(review)
    return created


def sync_message_ts(*, session: Session, reviews: list[Review] | None = None) -> None:
    """Copy where the outbox delivered each review message onto the review and its items."""
    if reviews is None:
        unsynced = select(ReviewItem.review_id).where(ReviewItem.message_ts.is_(None))
        reviews = list(
            session.scalars(
                select(Review)
                .where(or_(Review.parent_ts.is_(None), Review.id.in_(unsynced)))
                .options(selectinload(Review.items))
            )
        )
    for review in reviews:
        if review.parent_ts is None:
            review.parent_ts = _delivered_ts(session, parent_key(review.month, review.team_name))
        for item in review.items:
            if item.message_ts is None:
                item.message_ts = _delivered_ts(
                    session, item_key(review.month, review.team_name, item.model_name)
                )
    session.flush()


def _delivered_ts(session: Session, key: str) -> str | None:
    return session.scalars(
        select(OutboxMessage.slack_ts).where(OutboxMessage.dedupe_key == key)
    ).first()


def _load_item(session: Session, item_id: int, *, fresh: bool = False) -> ReviewItem:
    query = (
        select(ReviewItem)
        .where(ReviewItem.id == item_id)
        .options(selectinload(ReviewItem.review).selectinload(Review.items))
    )
    if fresh:  # overwrite what the session already loaded with what the database holds now
        query = query.execution_options(populate_existing=True)
    item = session.scalars(query).first()
    if item is None:
        raise NotFoundError("That review item no longer exists.")
    return item


def check_can_decide(*, session: Session, item_id: int, user_id: str) -> ReviewItem:
    """Return the item if the user may decide it (its model's owners, or an admin)."""
    item = _load_item(session, item_id)
    model = session.scalars(
        select(MLModel)
        .where(MLModel.name == item.model_name)
        .options(selectinload(MLModel.owners), selectinload(MLModel.team).selectinload(Team.owners))
    ).first()
    allowed = (
        is_admin(session, user_id) if model is None else (can_manage_model(session, user_id, model))
    )
    if not allowed:
        owners = " ".join(f"<@{u}>" for u in item.snapshot.get("owners") or [])
        raise PermissionDenied(
            f"Only the owners of `{item.model_name}`{f' ({owners})' if owners else ''} or an "
            "admin can decide in this review."
        )
    return item


DECISION_ATTEMPTS = 5
REFRESH_ROUNDS = 5
# what a thread refresh raises when Slack refuses or cannot be reached, or the message is too large
REFRESH_FAILURES: tuple[type[Exception], ...] = (*SLACK_FAILURES, MessageTooLarge)


class DecisionConflict(MlcostError):
    """Other decisions in the same review kept landing while this one was being recorded."""


def _lock_review(session: Session, review_id: int) -> int:
    """Lock the review's row until the transaction ends (PostgreSQL); return its version.

    SQLite ignores FOR UPDATE; there the compare-and-set in record_decision, made under
    SQLite's single write lock, detects a stale read instead.
    """
    version = session.scalar(select(Review.version).where(Review.id == review_id).with_for_update())
    if version is None:
        raise NotFoundError("That review no longer exists.")
    return version


def record_decision(
    *,
    session: Session,
    item_id: int,
    user_id: str,
    decision: str,
    reason: str | None,
    now: dt.datetime,
) -> ReviewItem:
    """Record (or change) a decision after checking permission; audited with who and when.

    Decisions in one review are serialised: the review's row is locked, the item and its
    siblings are read after the lock, and the review's version is bumped only if nobody else
    bumped it since that read (else the read is repeated). So the audit's `before` is the
    decision actually replaced, and the decision that completes the review closes it. The same
    decision by the same person with the same reason again (a double submit) records nothing.
    """
    if decision not in DECISIONS:
        raise UsageError(f"unknown decision {decision!r}")
    item = check_can_decide(session=session, item_id=item_id, user_id=user_id)
    review_id = item.review_id
    reason = (reason or "").strip()[:2000] or None
    for _ in range(DECISION_ATTEMPTS):
        version = _lock_review(session, review_id)
        item = _load_item(session, item_id, fresh=True)
        if (item.decision, item.decided_by, item.reason) == (decision, user_id, reason):
            return item  # the same decision again (a double submit): nothing new to record
        bumped = session.execute(
            update(Review)
            .where(Review.id == review_id, Review.version == version)
            .values(version=version + 1)
            .execution_options(synchronize_session=False)
        )
        if bumped.rowcount == 1:  # type: ignore[attr-defined]
            break
        log.info("review %d: a concurrent decision landed first; reading again", review_id)
    else:
        raise DecisionConflict("Others are deciding in this review right now; please try again.")
    review = item.review
    set_committed_value(review, "version", version + 1)  # what the UPDATE above wrote
    before = item.decision
    item.decision = decision
    item.decided_by = user_id
    item.decided_at = now
    item.reason = reason
    item.refresh_pending = True  # cleared once the thread shows it (see refresh_messages)
    item.refresh_error = None
    session.add(
        AuditLog(
            actor=user_id,
            action="review.decide",
            target=item_key(review.month, review.team_name, item.model_name),
            detail={"decision": decision, "before": before, "reason": item.reason},
        )
    )
    if all(i.decision for i in review.items):
        review.status = "decided"
        review.closed_at = review.closed_at or now
    session.flush()
    return item


def refresh_messages(
    *, session_factory: sessionmaker[Session], notifier: Notifier, item_id: int, currency: str
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
            with session_scope(session_factory) as session:
                # the version is read before the rows it stands for: PostgreSQL reads each statement
                # at its own moment, so rows read later are at least this new (a newer one is
                # noticed by the check below and rendered again)
                version = session.scalar(
                    select(Review.version).join(ReviewItem).where(ReviewItem.id == item_id)
                )
                item = _load_item(session, item_id)
                review = item.review
                sync_message_ts(session=session, reviews=[review])
                review_id, channel = review.id, review.channel
                item_ts, parent_ts = item.message_ts, review.parent_ts
                item_shown = render(item_message(item, currency)) if item_ts else None
                parent_shown = render(parent_message(review, currency)) if parent_ts else None
            if item_ts and item_shown:
                notifier.update(channel, item_ts, *item_shown)
            if parent_ts and parent_shown:
                notifier.update(channel, parent_ts, *parent_shown)
            with session_scope(session_factory) as session:
                _lock_review(session, review_id)  # PostgreSQL: no decision lands until this commits
                if item_ts and parent_ts:
                    unchanged = select(Review.id).where(
                        Review.id == review_id, Review.version == version
                    )
                    session.execute(
                        update(ReviewItem)
                        .where(ReviewItem.id == item_id, ReviewItem.review_id.in_(unchanged))
                        .values(refresh_pending=False)
                        .execution_options(synchronize_session=False)
                    )
                # read after that write: on SQLite the write lock it took keeps this read current
                if session.scalar(select(Review.version).where(Review.id == review_id)) == version:
                    return True
            # a decision landed after this round rendered: show it too
    except BaseException:  # Slack errors, a bug in rendering, an interrupt: whatever ends it
        _mark_unconfirmed(session_factory, item_id)
        raise
    log.warning("review item %d: decisions kept landing during its refresh; retried later", item_id)
    _mark_unconfirmed(session_factory, item_id)
    return False


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


# chat.update errors no retry fixes, besides those of a post
REFRESH_PERMANENT_ERRORS = PERMANENT_ERRORS | {
    "message_not_found",
    "cant_update_message",
    "edit_window_closed",
    "is_inactive",
}


def _slack_error(exc: Exception) -> str | None:
    response: Any = getattr(exc, "response", None)
    return response.get("error") if response is not None and hasattr(response, "get") else None


def _status_code(exc: Exception) -> int | None:
    return getattr(getattr(exc, "response", None), "status_code", None)


@dataclass
class RefreshReport:
    """What a refresh round did with each review item waiting for its thread update."""

    refreshed: list[int] = field(default_factory=list)
    retrying: list[int] = field(default_factory=list)  # still flagged; the next round tries again
    given_up: list[int] = field(default_factory=list)  # refused for good; the error is recorded


def refresh_pending_messages(
    *, session_factory: sessionmaker[Session], notifier: Notifier, currency: str, limit: int = 50
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
                item_id=item_id,
                currency=currency,
            )
        except REFRESH_FAILURES as exc:
            error = _slack_error(exc)
            if isinstance(exc, MessageTooLarge) or error in REFRESH_PERMANENT_ERRORS:
                log.error(
                    "review item %d: Slack refused its thread update for good: %s", item_id, exc
                )
                _give_up_refresh(session_factory, item_id, f"{type(exc).__name__}: {exc}")
                report.given_up.append(item_id)
                continue
            log.warning("review item %d: message not refreshed yet: %s", item_id, exc)
            report.retrying.append(item_id)
            if error == "ratelimited" or _status_code(exc) == 429:
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


def enqueue_reminders(*, session: Session, now: dt.datetime, after_days: int) -> int:
    """Enqueue one reminder per open review whose undecided models waited after_days; count them."""
    due = now - dt.timedelta(days=after_days)
    count = 0
    reviews = session.scalars(
        select(Review)
        .where(Review.status == "open", Review.created_at <= due)
        .options(selectinload(Review.items))
    )
    for review in reviews:
        waiting = [i for i in review.items if i.decision is None and i.reminded_at is None]
        if not waiting or review.parent_ts is None:
            continue
        message = ReviewReminderMessage(
            review.month,
            [
                (i.model_name, i.snapshot.get("owners") or [])
                for i in sorted(waiting, key=lambda i: i.id)
            ],
            after_days,
        )
        key = parent_key(review.month, review.team_name)
        if enqueue_message(
            session=session,
            dedupe_key=reminder_key(review.month, review.team_name),
            kind="review.reminder",
            channel=review.channel,
            message=message,
            thread_key=key,
        ):
            count += 1
        for item in waiting:
            item.reminded_at = now
    session.flush()
    return count


ChartRenderer = Callable[[Review], bytes]


@dataclass
class ReviewPostReport:
    opened: list[str] = field(default_factory=list)
    delivered: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)


def deliver_reviews(
    *,
    session_factory: sessionmaker[Session],
    notifier: Notifier,
    now: dt.datetime,
    find_posted: FindPosted | None,
    currency: str,
    report: ReviewPostReport | None = None,
    clock: Callable[[], dt.datetime] | None = None,
) -> ReviewPostReport:
    """Deliver pending review messages, record where they landed, upload pending charts.

    Delivery leases by `clock` when given (read at each claim), else as of `now`.
    """
    report = report or ReviewPostReport()
    delivery = deliver_pending(
        session_factory=session_factory,
        notifier=notifier,
        now=None if clock is not None else now,
        clock=clock,
        find_posted=find_posted,
        kinds=REVIEW_KINDS,
    )
    report.delivered += delivery.delivered
    report.failed += delivery.failed
    with session_scope(session_factory) as session:
        sync_message_ts(session=session)
        waiting = [
            (r.id, r.month, r.team_name)
            for r in session.scalars(select(Review).where(Review.parent_ts.is_not(None)))
            if _delivered_ts(session, chart_key(r.month, r.team_name)) is None
            and not _chart_claimed(session, chart_key(r.month, r.team_name))
        ]
    for review_id, month, team in waiting:
        if upload_chart(
            session_factory=session_factory,
            notifier=notifier,
            review_id=review_id,
            now=now,
            currency=currency,
        ):
            report.charts.append(chart_key(month, team))
    return report


def post_reviews(
    *,
    session_factory: sessionmaker[Session],
    notifier: Notifier,
    month: Period,
    settings: Settings,
    now: dt.datetime,
    find_posted: FindPosted | None = None,
    teams: set[str] | None = None,
    clock: Callable[[], dt.datetime] | None = None,
) -> ReviewPostReport:
    """Open the month's reviews (once), post them, and upload each team's chart (once)."""
    report = ReviewPostReport()
    with session_scope(session_factory) as session:
        report.opened = [
            parent_key(r.month, r.team_name)
            for r in open_reviews(
                session=session, month=month, settings=settings, now=now, teams=teams
            )
        ]
    return deliver_reviews(
        session_factory=session_factory,
        notifier=notifier,
        now=now,
        find_posted=find_posted,
        currency=settings.currency,
        report=report,
        clock=clock,
    )


def _chart_claimed(session: Session, key: str) -> bool:
    return (
        session.scalars(select(OutboxMessage.id).where(OutboxMessage.dedupe_key == key)).first()
        is not None
    )


def upload_chart(
    *,
    session_factory: sessionmaker[Session],
    notifier: Notifier,
    review_id: int,
    now: dt.datetime,
    currency: str,
) -> bool:
    """Upload a review's chart into its thread at most once; return whether this call did it.

    The upload is claimed with an outbox row in status `uploading` (which delivery never picks
    up); a failed upload releases the claim for the next run. A process that dies mid-upload
    leaves the claim, so the chart is never uploaded twice (the totals are in the message).
    """
    from bot.slack.charts.review import render_review_chart

    with session_scope(session_factory) as session:
        review = session.scalars(
            select(Review).where(Review.id == review_id).options(selectinload(Review.items))
        ).one()
        key = chart_key(review.month, review.team_name)
        insert_fn = dialect_insert(session)
        claimed = session.execute(
            insert_fn(OutboxMessage)
            .values(
                dedupe_key=key,
                kind="review.chart",
                channel=review.channel,
                payload={"text": "", "blocks": []},
                status="uploading",
                attempts=1,
                created_at=now,
            )
            .on_conflict_do_nothing(index_elements=["dedupe_key"])
            .returning(OutboxMessage.id)
        ).first()
        if claimed is None:
            return False
        channel, parent_ts = review.channel, review.parent_ts
        snaps = [i.snapshot for i in sorted(review.items, key=lambda i: i.id)]
        month, team = review.month, review.team_name
    try:
        png = render_review_chart(month, team, snaps, currency)
        notifier.upload_png(
            channel,
            f"mlcost-review-{team}-{month}.png",
            png,
            f"{team}: cost by model and stage, {month}",
            thread_ts=parent_ts,
        )
    except Exception as exc:
        log.warning("review chart %s not uploaded: %s", key, type(exc).__name__)
        with session_scope(session_factory) as session:
            session.execute(delete(OutboxMessage).where(OutboxMessage.dedupe_key == key))
        return False
    with session_scope(session_factory) as session:
        row = session.scalars(select(OutboxMessage).where(OutboxMessage.dedupe_key == key)).one()
        row.status = "delivered"
        row.delivered_at = now
        row.slack_channel = channel
    return True


def review_status(*, session: Session, month: str) -> list[tuple[Review, int, int]]:
    """Return each review of the month with (decided, total) item counts."""
    reviews = session.scalars(
        select(Review)
        .where(Review.month == month)
        .options(selectinload(Review.items))
        .order_by(Review.team_name)
    ).all()
    return [(r, sum(1 for i in r.items if i.decision), len(r.items)) for r in reviews]


def latest_decision(*, session: Session, model: str) -> ReviewItem | None:
    """Return the model's most recent decided review item."""
    return session.scalars(
        select(ReviewItem)
        .join(Review)
        .where(ReviewItem.model_name == model, ReviewItem.decision.is_not(None))
        .order_by(Review.month.desc(), ReviewItem.decided_at.desc())
        .options(selectinload(ReviewItem.review))
    ).first()


def may_post_reviews(session: Session, user_id: str) -> set[str] | None:
    """Return the teams a user may post reviews for (None: all, for admins)."""
    if is_admin(session, user_id):
        return None
    teams = session.scalars(select(Team).options(selectinload(Team.owners))).all()
    return {t.name for t in teams if user_id in {o.user_id for o in t.owners}}
