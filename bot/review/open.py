"""Open the monthly kill-or-keep review per team, and remind its owners once.

Every post goes through the outbox with a dedupe key per (month, team[, model]), so a review is
posted once however often the job or the command runs, across restarts and replicas. A review's
rows and its outbox messages are created in the same transaction.
"""

from __future__ import annotations

import datetime as dt
import logging

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from bot.config import EconomicsSettings
from bot.db.schema import AuditLog, MLModel, Review, ReviewItem, Team
from bot.economics.unit_costs import ModelEconomics, month_economics
from bot.notify.outbox import enqueue_message
from bot.periods import Period
from bot.registry.catalog import model_owner_ids
from bot.review.messages import ReviewReminderMessage
from bot.review.signoff import signoff_counts
from bot.review.threads import item_key, item_message, parent_key, parent_message, reminder_key

log = logging.getLogger(__name__)


def open_reviews(
    *,
    session: Session,
    month: Period,
    settings: EconomicsSettings,
    now: dt.datetime,
    teams: set[str] | None = None,
) -> list[Review]:
    """Create each team's review of the month and enqueue its messages; return the new ones.

    A team gets a review when it has a channel and an active model with cost in the month.
    Existing reviews are left untouched.
    """
    economics = month_economics(session=session, month=month, settings=settings)
    signoffs = signoff_counts(session=session, period=month)
    created: list[Review] = []
    query = select(Team).options(selectinload(Team.owners)).order_by(Team.name)
    for team in session.scalars(query):
        if teams is not None and team.name not in teams:
            continue
        reviewed = _models_with_cost(session, team, economics)
        if not reviewed:
            continue
        if not team.channel:
            log.warning("team %s has no channel; its %s review is skipped", team.name, month.label)
            continue
        review = _create_review(session, month, team, now)
        if review is None:
            continue
        for model in reviewed:
            review.items.append(_review_item(model, economics[model.name], signoffs))
        session.flush()
        _enqueue_review(session, review, settings.currency)
        created.append(review)
    return created


def _models_with_cost(
    session: Session, team: Team, economics: dict[str, ModelEconomics]
) -> list[MLModel]:
    """Return the team's active models with cost in the reviewed month."""
    models = session.scalars(
        select(MLModel)
        .where(MLModel.team_id == team.id, MLModel.status == "active")
        .options(selectinload(MLModel.owners), selectinload(MLModel.team))
        .order_by(MLModel.name)
    ).all()
    return [m for m in models if m.name in economics and economics[m.name].current.cost > 0]


def _create_review(session: Session, month: Period, team: Team, now: dt.datetime) -> Review | None:
    """Add the team's review of the month, or return None when it exists already."""
    exists = session.scalars(
        select(Review.id).where(Review.month == month.label, Review.team_name == team.name)
    ).first()
    if exists is not None:
        return None
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
        return None
    return review


def _review_item(
    model: MLModel, economics: ModelEconomics, signoffs: dict[str, tuple[int, int]]
) -> ReviewItem:
    """Return a model's review item with its snapshot: economics, owners, sign-offs."""
    snapshot = economics.as_json()
    snapshot["owners"] = sorted(model_owner_ids(model))
    signed, weeks = signoffs.get(model.name, (0, 0))
    snapshot["signoffs"] = {"signed": signed, "weeks": weeks}
    return ReviewItem(model_name=model.name, snapshot=snapshot)


def _enqueue_review(session: Session, review: Review, currency: str) -> None:
    """Record the review's parent message and its items' thread replies in the outbox; audit."""
    key = parent_key(review.month, review.team_name)
    enqueue_message(
        session=session,
        dedupe_key=key,
        kind="review.parent",
        channel=review.channel,
        message=parent_message(review, currency),
    )
    for item in sorted(review.items, key=lambda i: i.id):
        enqueue_message(
            session=session,
            dedupe_key=item_key(review.month, review.team_name, item.model_name),
            kind="review.item",
            channel=review.channel,
            message=item_message(item, currency),
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
