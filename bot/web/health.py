"""What /healthz reports beyond "the database answers": is anything stuck?"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import IngestionRun, OutboxMessage, Review, ReviewItem
from bot.db.tables import OutboxStatus
from bot.notify.source_health import source_failures

RECENT_FAILURES = 5


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def health_snapshot(session: Session, now: dt.datetime) -> dict[str, Any]:
    """Return the outbox backlog, ingestion, failing poll sources and review threads to update.

    The backlog is what monitoring should watch: messages waiting to be posted (Slack rate
    limiting or down, or no scheduler running) and how long the oldest has waited.
    """
    waiting, oldest = session.execute(
        select(func.count(), func.min(OutboxMessage.created_at)).where(
            OutboxMessage.status.in_((OutboxStatus.PENDING, OutboxStatus.SENDING))
        )
    ).one()
    failed = session.scalar(
        select(func.count())
        .select_from(OutboxMessage)
        .where(OutboxMessage.status == OutboxStatus.FAILED)
    )
    # why the latest ones failed: Slack's refusal (channel_not_found, msg_blocks_too_long, ...)
    failures = [
        {"key": key, "channel": channel, "reason": (reason or "unknown").splitlines()[0][:300]}
        for key, channel, reason in session.execute(
            select(OutboxMessage.dedupe_key, OutboxMessage.channel, OutboxMessage.last_error)
            .where(OutboxMessage.status == OutboxStatus.FAILED)
            .order_by(OutboxMessage.id.desc())
            .limit(RECENT_FAILURES)
        )
    ]
    refusals = [
        {"item": f"{model} ({month} review)", "reason": (reason or "").splitlines()[0][:300]}
        for model, month, reason in session.execute(
            select(ReviewItem.model_name, Review.month, ReviewItem.refresh_error)
            .join(Review, Review.id == ReviewItem.review_id)
            .where(ReviewItem.refresh_error.is_not(None))
            .order_by(ReviewItem.id.desc())
            .limit(RECENT_FAILURES)
        )
    ]
    last = session.execute(
        select(IngestionRun.source, IngestionRun.finished_at)
        .where(IngestionRun.status == "succeeded")
        .order_by(IngestionRun.finished_at.desc())
        .limit(1)
    ).first()
    refresh = session.scalar(
        select(func.count()).select_from(ReviewItem).where(ReviewItem.refresh_pending.is_(True))
    )
    refresh_failed = session.scalar(
        select(func.count()).select_from(ReviewItem).where(ReviewItem.refresh_error.is_not(None))
    )
    return {
        "outbox": {
            "waiting": int(waiting or 0),
            "oldest_waiting_seconds": (
                max(0, int((now - oldest).total_seconds())) if oldest is not None else None
            ),
            "failed": int(failed or 0),
            "failed_recent": failures,  # not retried: Slack refused them for good
        },
        "last_ingestion": (
            {"source": last.source, "finished_at": _iso(last.finished_at)} if last else None
        ),
        "source_failures": source_failures(session),
        "review_threads_to_update": int(refresh or 0),
        "review_threads_failed": int(refresh_failed or 0),  # Slack refused for good; not retried
        "review_threads_failed_recent": refusals,
    }
