"""What a closed resource finding has saved: its last monthly cost times the days since, in cents.

Kept apart from bot/waste/lifecycle.py so the waste lists (bot/waste/findings.py) read it without
importing the lifecycle, which posts through the outbox.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, TypeAlias

# A resource_findings row read by its column names: the ORM's ResourceFindingRecord (the
# lifecycle, which changes it) or a Core Row of bot.db.tables.resource_findings (the waste lists,
# which only read, never loading the ORM).
FindingRow: TypeAlias = Any

OPEN, CLOSED = "open", "closed"


def cents(amount: Decimal) -> Decimal:
    """Round an amount to cents, half to even."""
    return amount.quantize(Decimal("0.01"), ROUND_HALF_EVEN)


def saved_so_far(row: FindingRow, as_of: dt.datetime) -> Decimal | None:
    """Return what a closed finding has saved by `as_of` (None while it is open)."""
    if row.status != CLOSED:
        return None
    seconds = max(Decimal(0), Decimal(str((as_of - row.last_seen).total_seconds())))
    return cents(row.monthly_cost * seconds / Decimal(86400 * 30))
