"""Exact money: parsing, rounding and the way finance people read amounts."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Decimal, InvalidOperation
from enum import StrEnum
from typing import TypeVar

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


def format_money_exact(value: Decimal, currency: str) -> str:
    """Render an amount exactly, as budgets are set: `$83,183`, `€2,500.50` (cents if it has
    them, more places if it has more)."""
    exponent = value.normalize().as_tuple().exponent
    places = 0 if not isinstance(exponent, int) or exponent >= 0 else max(2, -exponent)
    return format_money_places(value, currency, places)


def column_places(values: Iterable[Decimal | None]) -> int:
    """Return the decimals a money column shows: cents if any amount is under 100, else none.

    Zero does not count: `$0` is exact in a column of whole amounts.
    """
    return 2 if any(v is not None and v != 0 and abs(v) < 100 for v in values) else 0


K = TypeVar("K", bound=Hashable)


def largest_remainder(
    values: Mapping[K, Decimal], target: Decimal, unit: Decimal = CENT
) -> dict[K, Decimal]:
    """Round values to `unit`s so they add up to `target` (a whole number of units) exactly.

    Each value is floored to the unit; the units still missing go, one each, to the values
    that lost the most (ties in key order). No value moves by a unit or more.
    """
    floors = {k: v.quantize(unit, rounding=ROUND_FLOOR) for k, v in values.items()}
    missing = int((target - sum(floors.values(), ZERO)) / unit)
    if not 0 <= missing <= len(values):
        raise ValueError(f"cannot round {sum(values.values(), ZERO)} to {target} by {unit}")
    order = sorted(values, key=lambda k: (-(values[k] - floors[k]), str(k)))
    for key in order[:missing]:
        floors[key] += unit
    return floors


def shown_parts(values: Sequence[Decimal], places: int) -> tuple[list[Decimal], Decimal]:
    """Round amounts shown with their total so the shown ones add up to the shown total.

    The total is the exact sum rounded to `places` decimals; the parts are rounded to it by
    the largest remainder (each moves by less than one unit of the last place shown).
    """
    unit = Decimal(1).scaleb(-places)
    total = sum(values, ZERO).quantize(unit, rounding=ROUND_HALF_EVEN)
    parts = largest_remainder(dict(enumerate(values)), total, unit)
    return [parts[i] for i in range(len(values))], total


def shown_breakdown(parts: Sequence[Decimal], total: Decimal) -> tuple[int, list[Decimal]]:
    """Return the places `format_money` shows `total` with, and the parts rounded to add up to
    it as shown (largest remainder). Parts that are not the whole total are only rounded."""
    places = 0 if abs(total) >= 100 else 2
    if sum(parts, ZERO) != total:
        unit = Decimal(1).scaleb(-places)
        return places, [part.quantize(unit, rounding=ROUND_HALF_EVEN) for part in parts]
    return places, shown_parts(parts, places)[0]


def shown_within(parts: Sequence[Decimal], shown_total: Decimal, places: int) -> list[Decimal]:
    """Round parts to `places` decimals so they add up to a total as it is already shown
    (itself rounded to add up to something larger); parts that are not the whole are only
    rounded."""
    unit = Decimal(1).scaleb(-places)
    try:
        rounded = largest_remainder(dict(enumerate(parts)), shown_total, unit)
    except ValueError:
        return [part.quantize(unit, rounding=ROUND_HALF_EVEN) for part in parts]
    return [rounded[i] for i in range(len(parts))]


def shown_percents(parts: Sequence[Decimal], total: Decimal) -> list[Decimal | None]:
    """Return each part as a whole percentage of `total`, None when the total is zero.

    Parts that make up the whole total are rounded by the largest remainder, so the shares
    shown together add up to 100 %; parts of a partial list are only rounded.
    """
    if total == 0:
        return [None] * len(parts)
    exact = [part * 100 / total for part in parts]
    whole = [value.quantize(Decimal(1), rounding=ROUND_HALF_EVEN) for value in exact]
    if sum(parts, ZERO) != total:
        return list(whole)
    try:
        rounded = largest_remainder(dict(enumerate(exact)), Decimal(100), Decimal(1))
    except ValueError:
        return list(whole)
    return [rounded[i] for i in range(len(parts))]


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
