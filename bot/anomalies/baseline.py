"""The robust baseline the anomaly rule judges a day against (pure).

The median of the days and the spread their median absolute deviation (scaled to a standard
deviation), so one past spike does not hide the next. Forecasts use the same ceiling to leave
unusual days out of the weekday pattern they learn (bot/spend/forecast.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

SPREADS = Decimal("3.5")
MAD_TO_SIGMA = Decimal("1.4826")
RELATIVE_FLOOR = Decimal("0.10")
ZERO = Decimal(0)


@dataclass(frozen=True)
class Baseline:
    median: Decimal
    spread: Decimal
    days: int

    @property
    def ceiling(self) -> Decimal:
        """Return the value above which a day is unusual."""
        return self.median + max(SPREADS * self.spread, RELATIVE_FLOOR * self.median)


def robust_baseline(values: Sequence[Decimal]) -> Baseline:
    """Return the median and the MAD-based spread of the values."""
    if not values:
        return Baseline(median=ZERO, spread=ZERO, days=0)
    median = _median(values)
    mad = _median([abs(v - median) for v in values])
    return Baseline(median=median, spread=mad * MAD_TO_SIGMA, days=len(values))


def _median(values: Sequence[Decimal]) -> Decimal:
    """statistics.median, without its generic checks: forecasts take tens of thousands."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return Decimal(ordered[middle])
    return Decimal((ordered[middle - 1] + ordered[middle]) / 2)
