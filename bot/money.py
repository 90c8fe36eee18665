"""Exact money: parsing, rounding and the way finance people read amounts."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from enum import StrEnum

ZERO = Decimal(0)
CENT = Decimal("0.01")
# The largest budget mlcost stores (bot/db/schema.py BudgetMoney holds it on SQLite too).
MAX_BUDGET = Decimal(1_000_000_000_000)


class CostBasis(StrEnum):
    """Which cost a figure shows: as invoiced, or amortised (Savings Plans and RIs spread)."""

    BILLED = "billed"
    EFFECTIVE = "effective"


class MoneyError(ValueError):
    """A value that should be an amount of money is not one."""


def parse_money(raw: object) -> Decimal:
    """Parse a cost cell into a Decimal; blank and NULL mean zero."""
    if raw is None:
        return ZERO
    if isinstance(raw, Decimal):
        return raw
    if isinstance(raw, float):
        # Go through repr so 0.1 stays 0.1 rather than its binary expansion.
        return Decimal(repr(raw))
    text = str(raw).strip().replace(",", "")
    if text in ("", "NULL", "null", "None", "NaN", "nan"):
        return ZERO
    try:
        value = Decimal(text)
    except InvalidOperation as exc:
        raise MoneyError(f"not a number: {raw!r}") from exc
    if not value.is_finite():
        raise MoneyError(f"not a finite number: {raw!r}")
    return value


CURRENCY_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£"}


def format_money(value: Decimal, currency: str = "USD") -> str:
    """Render `$12,345` (whole dollars above 100, cents below)."""
    return format_money_places(value, currency, 0 if abs(value) >= 100 else 2)


def format_money_places(value: Decimal, currency: str, places: int) -> str:
    """Render money with exactly `places` decimals (a table column uses one precision)."""
    sign = "-" if value < 0 else ""
    body = f"{abs(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN):,}"
    symbol = CURRENCY_SYMBOLS.get(currency)
    return f"{sign}{symbol}{body}" if symbol else f"{sign}{body} {currency}"


def column_places(values: Iterable[Decimal | None]) -> int:
    """Return the decimals a money column shows: cents if any amount is under 100, else none.

    Zero does not count: `$0` is exact in a column of whole amounts.
    """
    return 2 if any(v is not None and v != 0 and abs(v) < 100 for v in values) else 0


def format_percent(value: Decimal | None) -> str:
    """Render a ratio already in percent as `81 %`."""
    if value is None:
        return "n/a"
    return f"{value.quantize(Decimal(1), rounding=ROUND_HALF_EVEN)} %"


def percent_of(part: Decimal, whole: Decimal) -> Decimal | None:
    """Return part as a percentage of whole, or None when whole is zero."""
    if whole == 0:
        return None
    return part * 100 / whole
