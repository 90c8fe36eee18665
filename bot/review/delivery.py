"""Post the month's reviews through the outbox and upload each team's chart once."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, selectinload, sessionmaker

from bot.config import ReviewSettings
from bot.db.engine import dialect_insert, session_scope
from bot.db.schema import OutboxMessage, Review
from bot.db.tables import OutboxStatus
from bot.notify.delivery import DeliveryEdge, OutboxTiming, deliver_pending, outbox_timing
from bot.periods import Period
from bot.review.open import open_reviews
from bot.review.threads import chart_key, delivered_ts, parent_key, sync_message_ts
from bot.slack.notifier import Notifier

log = logging.getLogger(__name__)


REVIEW_KINDS = ("review.parent", "review.item", "review.reminder")


@dataclass
class ReviewPostReport:
    opened: list[str] = field(default_factory=list)
    delivered: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)


def deliver_reviews(
    *,
    session_factory: sessionmaker[Session],
    edge: DeliveryEdge,
    now: dt.datetime,
    currency: str,
    timing: OutboxTiming,
    report: ReviewPostReport | None = None,
) -> ReviewPostReport:
    """Deliver pending review messages, record where they landed, upload pending charts.

    Delivery leases by the database's clock, for `timing.lease` (MLCOST_OUTBOX_LEASE_SECONDS).
    """
    report = report or ReviewPostReport()
    delivery = deliver_pending(
        session_factory=session_factory, edge=edge, kinds=REVIEW_KINDS, timing=timing
    )
    report.delivered += delivery.delivered
    report.failed += delivery.failed
    with session_scope(session_factory) as session:
        sync_message_ts(session=session)
        waiting = [
            (r.id, r.month, r.team_name)
            for r in session.scalars(select(Review).where(Review.parent_ts.is_not(None)))
            if delivered_ts(session, chart_key(r.month, r.team_name)) is None
            and not _chart_claimed(session, chart_key(r.month, r.team_name))
        ]
    for review_id, month, team in waiting:
        if upload_chart(
            session_factory=session_factory,
            notifier=edge.notifier,
            review_id=review_id,
            now=now,
            currency=currency,
        ):
            report.charts.append(chart_key(month, team))
    return report


def post_reviews(
    *,
    session_factory: sessionmaker[Session],
    edge: DeliveryEdge,
    month: Period,
    settings: ReviewSettings,
    now: dt.datetime,
    teams: set[str] | None = None,
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
        edge=edge,
        now=now,
        currency=settings.currency,
        timing=outbox_timing(settings),
        report=report,
    )


def _chart_claimed(session: Session, key: str) -> bool:
    return (
        session.scalars(select(OutboxMessage.id).where(OutboxMessage.dedupe_key == key)).first()
        is not None
    )


def _claim_chart(session: Session, key: str, channel: str, now: dt.datetime) -> bool:
    """Claim a chart's upload with an outbox row in status `uploading`; return whether we did."""
    insert_fn = dialect_insert(session)
    claimed = session.execute(
        insert_fn(OutboxMessage)
        .values(
            dedupe_key=key,
            kind="review.chart",
            channel=channel,
            payload={"text": "", "blocks": []},
            status=OutboxStatus.UPLOADING,
            attempts=1,
            created_at=now,
        )
        .on_conflict_do_nothing(index_elements=["dedupe_key"])
        .returning(OutboxMessage.id)
    ).first()
    return claimed is not None


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
        if not _claim_chart(session, key, review.channel, now):
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
        row.status = OutboxStatus.DELIVERED
        row.delivered_at = now
        row.slack_channel = channel
    return True
