"""Argument types the command parsers share; light to import (`mlcost --help` loads this)."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from bot.errors import UsageError
from bot.periods import parse_day


def day_argument(text: str) -> dt.date:
    """Parse a command-line date (`YYYY-MM-DD`, `today`, `yesterday`; today is the UTC date)."""
    try:
        return parse_day(text, dt.datetime.now(dt.UTC).date())
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_cost_basis_argument(parser: Any) -> None:
    """Add `--cost billed|effective` (the invoice's cost, or amortised) to a report command."""
    from bot.money import CostBasis

    parser.add_argument(
        "--cost",
        choices=[basis.value for basis in CostBasis],
        default=CostBasis.BILLED.value,
        help="billed (invoice) or effective (amortised) cost",
    )
