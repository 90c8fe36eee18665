"""Tick formats every chart shares: money in one format per axis, dates without an offset.

A money axis mixing `$800`, `$1.2k` and `$10k` makes a reader compare formats instead of
heights, so all of an axis's labels share one scale and one number of decimals: `$0`, `$5,000`
... `$30,000` below a million, `$0.5M`, `$1.0M` ... above. A date axis names the month in every
label (`Nov 8`) and has no offset text (matplotlib's concise formatter would write the year and
month of the window's end, "2026-Dec", under an Oct–Nov window).
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from matplotlib.dates import AutoDateLocator, num2date
from matplotlib.ticker import Formatter, MaxNLocator

from bot.money import CURRENCY_SYMBOLS

MILLION = 1_000_000
MAX_DECIMALS = 2


class MoneyFormatter(Formatter):
    """Format an axis's money ticks with one scale and one number of decimals."""

    def __init__(self, currency: str) -> None:
        self.symbol = CURRENCY_SYMBOLS.get(currency, "")
        self.scale, self.suffix, self.decimals = 1.0, "", 0

    def set_locs(self, locs: list[float]) -> None:
        """Choose the scale and decimals that show every tick exactly."""
        super().set_locs(locs)
        largest = max((abs(v) for v in locs), default=0.0)
        self.scale, self.suffix = (MILLION, "M") if largest >= MILLION else (1.0, "")
        scaled = [v / self.scale for v in locs]
        self.decimals = next(
            (
                places
                for places in range(MAX_DECIMALS + 1)
                if all(math.isclose(round(v, places), v, abs_tol=1e-9) for v in scaled)
            ),
            MAX_DECIMALS,
        )

    def __call__(self, x: float, pos: int | None = None) -> str:
        """Return one tick's label in the axis's format."""
        sign = "-" if x < 0 else ""
        body = f"{abs(x) / self.scale:,.{self.decimals}f}"
        return f"{sign}{self.symbol}{body}{self.suffix}"

    def get_offset(self) -> str:
        """Return no offset: every label carries its full amount."""
        return ""


def money_axis(axis: Any, currency: str, label: str) -> None:
    """Label an axis with its currency and format its ticks as money, one format for all."""
    axis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 5, 10], min_n_ticks=3))
    axis.set_major_formatter(MoneyFormatter(currency))
    axis.set_label_text(f"{label} ({currency})")


class DayFormatter(Formatter):
    """Format a date tick as `Nov 8`: the month in every label, no offset text."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        day: dt.datetime = num2date(x)
        return f"{day:%b} {day.day}"

    def get_offset(self) -> str:
        """Return no offset (no "2026-Dec" under the axis)."""
        return ""


def date_axis(axis: Any) -> None:
    """Put day ticks on an axis, each label naming its month and day."""
    axis.set_major_locator(AutoDateLocator(minticks=4, maxticks=9))
    axis.set_major_formatter(DayFormatter())
