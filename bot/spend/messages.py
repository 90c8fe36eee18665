"""The spend message the poll plans: a week's spend with no owner, for FinOps."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class UnallocatedAlertMessage:
    """A week's spend with no owner: (service, tag value, cost) lines, largest first."""

    lines: list[tuple[str, str | None, Decimal]]
    total: Decimal
    week_label: str
    currency: str
