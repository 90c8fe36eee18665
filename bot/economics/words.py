"""Unit economics in plain words: counts, cost per 1k units, changes (terminal, JSON, Slack).

No markup here: the Slack builders (bot/slack/blocks/economics.py) and `mlcost review show`'s
table both use these, so a terminal never loads the Slack modules for them.
"""

from __future__ import annotations

from decimal import Decimal

from bot.money import CURRENCY_SYMBOLS, format_money


def format_units(value: Decimal | None) -> str:
    """Render a count like 1.2M, 350k or 940."""
    if value is None:
        return "n/a"
    for size, suffix in ((Decimal(10**9), "B"), (Decimal(10**6), "M"), (Decimal(1000), "k")):
        if abs(value) >= size:
            return f"{(value / size).quantize(Decimal('0.1'))}{suffix}"
    return f"{value.quantize(Decimal(1))}"


def format_unit_cost(value: Decimal | None, currency: str = "USD") -> str:
    """Render cost per 1k units: cents above $1, four decimals below."""
    if value is None:
        return "n/a"
    if abs(value) >= 1:
        return format_money(value, currency)
    symbol = CURRENCY_SYMBOLS.get(currency, "")
    body = f"{value.quantize(Decimal('0.0001'))}"
    while body.endswith("0") and len(body.split(".")[1]) > 2:
        body = body[:-1]  # 0.6000 reads as 0.60; 0.0292 keeps its digits
    return f"{symbol}{body}" + ("" if symbol else f" {currency}")


def format_change(value: Decimal | None) -> str:
    """Render a change in percent with its sign, e.g. +12 %."""
    if value is None:
        return "n/a"
    rounded = value.quantize(Decimal(1))
    return f"{'+' if rounded > 0 else ''}{rounded} %"
