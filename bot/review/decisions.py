"""Record kill-or-keep decisions: who may decide, serialised per review, audited."""

from __future__ import annotations

import datetime as dt
import logging

from sqlalchemy import select, update
from sqlalchemy.orm import Session, selectinload
from sqlalchemy.orm.attributes import set_committed_value

from bot.db.schema import AuditLog, MLModel, Review, ReviewItem, Team
from bot.errors import MlcostError, NotFoundError, PermissionDenied, UsageError
from bot.registry.catalog import can_manage_model, is_admin
from bot.review.messages import DECISIONS
from bot.review.threads import item_key

log = logging.getLogger(__name__)


def load_item(session: Session, item_id: int, *, fresh: bool = False) -> ReviewItem:
    """Return a review item with its review and siblings, or raise NotFoundError."""
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
    item = load_item(session, item_id)
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


class DecisionConflict(MlcostError):
    """Other decisions in the same review kept landing while this one was being recorded."""


def lock_review(session: Session, review_id: int) -> int:
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
        version = lock_review(session, review_id)
        item = load_item(session, item_id, fresh=True)
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
