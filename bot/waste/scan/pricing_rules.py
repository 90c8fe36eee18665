"""Price a resource: the ledger's run-rate where it has line items, else the price table."""

from __future__ import annotations

from decimal import Decimal

from bot.waste.pricing import PriceRow, monthly_from_gb, monthly_from_hourly
from bot.waste.scan.context import ScanContext
from bot.waste.scan.model import Price

UNPRICED = "unpriced ({what} is not in the price table)"


def hourly_price(
    ctx: ScanContext, ledger_ids: list[str], kind: str, type_name: str | None, count: int = 1
) -> Price:
    """Price an hourly-billed resource (instance, endpoint variant, notebook)."""
    ledger = ctx.ledger.run_rate(*ledger_ids)
    if ledger is not None:
        return Price(ledger, "ledger")
    row = ctx.prices.hourly(kind, type_name)
    if row is None:
        return Price(Decimal(0), UNPRICED.format(what=type_name or "its type"))
    return Price(monthly_from_hourly(row.price, count), row.label)


def storage_price(
    ctx: ScanContext, ledger_ids: list[str], kind: str, type_name: str, size_bytes: int | Decimal
) -> Price:
    """Price a GB-month-billed resource (volume, snapshot)."""
    ledger = ctx.ledger.run_rate(*ledger_ids)
    if ledger is not None:
        return Price(ledger, "ledger")
    row = ctx.prices.get(kind, type_name)
    if row is None:
        return Price(Decimal(0), UNPRICED.format(what=f"{kind} {type_name}"))
    return Price(monthly_from_gb(row.price, size_bytes), row.label)


def row_monthly(row: PriceRow, count: int = 1) -> Decimal:
    """Return a month of an hourly row."""
    return monthly_from_hourly(row.price, count)
