"""Where the reviews stand: each review's progress, and who may post them."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from bot.db.schema import Review, Team
from bot.registry.catalog import is_admin


def review_status(*, session: Session, month: str) -> list[tuple[Review, int, int]]:
    """Return each review of the month with (decided, total) item counts."""
    reviews = session.scalars(
        select(Review)
        .where(Review.month == month)
        .options(selectinload(Review.items))
        .order_by(Review.team_name)
    ).all()
    return [(r, sum(1 for i in r.items if i.decision), len(r.items)) for r in reviews]


def may_post_reviews(session: Session, user_id: str) -> set[str] | None:
    """Return the teams a user may post reviews for (None: all, for admins)."""
    if is_admin(session, user_id):
        return None
    teams = session.scalars(select(Team).options(selectinload(Team.owners))).all()
    return {t.name for t in teams if user_id in {o.user_id for o in t.owners}}
