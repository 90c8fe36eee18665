"""A review thread's messages: their outbox keys, what they show, where they landed."""

from __future__ import annotations

from sqlalchemy import or_, select
from sqlalchemy.orm import Session, selectinload

from bot.db.schema import OutboxMessage, Review, ReviewItem
from bot.review.messages import DecisionState, ReviewItemMessage, ReviewParentMessage


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
            review.parent_ts = delivered_ts(session, parent_key(review.month, review.team_name))
        for item in review.items:
            if item.message_ts is None:
                item.message_ts = delivered_ts(
                    session, item_key(review.month, review.team_name, item.model_name)
                )
    session.flush()


def delivered_ts(session: Session, key: str) -> str | None:
    """Return the ts the outbox recorded for a delivered message, if any."""
    return session.scalars(
        select(OutboxMessage.slack_ts).where(OutboxMessage.dedupe_key == key)
    ).first()
