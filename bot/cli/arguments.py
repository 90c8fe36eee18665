"""Argument types the command parsers share; light to import (`mlcost --help` loads this)."""

from __future__ import annotations

from typing import Any

# the billing sources' arguments use it too (bot/ingest/sources/registry.py), below the CLI
from bot.periods import day_argument as day_argument


def add_cost_basis_argument(parser: Any) -> None:
    """Add `--cost billed|effective` (the invoice's cost, or amortised) to a report command."""
    from bot.money import CostBasis

    parser.add_argument(
        "--cost",
        choices=[basis.value for basis in CostBasis],
        default=CostBasis.BILLED.value,
        help="billed (invoice) or effective (amortised) cost (default: billed)",
    )
