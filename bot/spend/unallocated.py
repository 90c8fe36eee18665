"""Spend no model owns, grouped by what would fix it."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy.orm import Session

from bot.money import CostBasis
from bot.periods import Period
from bot.spend.reports import SpendReport, display_currency, spend_report


@dataclass
class UnallocatedReport:
    lines: SpendReport  # grouped by model tag value, then service
    all_spend: Decimal  # every dollar in the period, for the share
    currency: str = "USD"


def unallocated_report(
    *, session: Session, period: Period, basis: CostBasis = CostBasis.BILLED, currency: str = "USD"
) -> UnallocatedReport:
    """Group the period's unallocated spend by model tag value and service, in one currency.

    Idle cluster capacity, tax and support fees are no one's by nature, not for want of a tag:
    they are left out (`report chargeback` splits them among the teams).
    """
    currency = display_currency(session, setting=currency, period=period, what="Spend")
    lines = spend_report(
        session=session,
        period=period,
        by=["tag", "service"],
        basis=basis,
        where={"model": None},
        only_taggable=True,
    )
    everything = spend_report(session=session, period=period, by=["category"], basis=basis)
    return UnallocatedReport(lines, everything.total, currency)
