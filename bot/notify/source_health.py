"""Which poll sources last failed, and why, in the database so every replica's /healthz sees it.

A failure is recorded with the source's stable name, when, the error's class and a short message
with anything that looks like a credential removed; the next successful fetch clears it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from bot.db.schema import SourceFailure
from bot.masking import mask_text

MESSAGE_LIMIT = 300


def redact(text: str) -> str:
    """Return the text with URL credentials, AWS key ids and `secret=...` values masked."""
    return mask_text(text)


def safe_error_message(exc: BaseException) -> str:
    """Return the first line of an error's message, redacted and clipped for /healthz."""
    lines = str(exc).strip().splitlines()
    message = redact(lines[0] if lines else "")
    if len(message) > MESSAGE_LIMIT:
        message = message[: MESSAGE_LIMIT - 1] + "…"
    return message


def record_source_failure(
    *, session: Session, source: str, exc: BaseException, now: dt.datetime
) -> SourceFailure:
    """Record (or replace) a source's last failure."""
    row = session.get(SourceFailure, source)
    if row is None:
        row = SourceFailure(source=source)
        session.add(row)
    row.failed_at = now
    row.error = type(exc).__name__[:100]
    row.message = safe_error_message(exc)
    session.flush()
    return row


def clear_source_failure(*, session: Session, source: str) -> None:
    """Forget a source's failure: it has just been fetched."""
    session.execute(delete(SourceFailure).where(SourceFailure.source == source))


def source_failures(session: Session) -> list[dict[str, Any]]:
    """Return each source whose last fetch failed, for /healthz."""
    return [
        {
            "source": row.source,
            "failed_at": row.failed_at.isoformat(),
            "error": row.error,
            "message": row.message,
        }
        for row in session.scalars(select(SourceFailure).order_by(SourceFailure.source))
    ]
