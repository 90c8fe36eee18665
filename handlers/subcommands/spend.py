"""Spend subcommands that read the ledger."""

from __future__ import annotations

from bot.errors import UsageError
from bot.periods import month_of, month_period
from bot.slack.blocks.spend import build_unallocated_blocks
from bot.slack.command_router import Invocation, Reply, Subcommand
from bot.spend.unallocated import unallocated_report


def handle_unallocated(inv: Invocation) -> Reply:
    """Spend with no owner this month, by service and the tag value that would fix it."""
    if len(inv.args) > 1:
        raise UsageError("Usage: `/mlcost unallocated [YYYY-MM]`")
    period = month_period(inv.args[0]) if inv.args else month_of(inv.now.date())
    report = unallocated_report(session=inv.session, period=period, currency=inv.settings.currency)
    text, blocks = build_unallocated_blocks(report, report.currency)
    return Reply(text=text, blocks=blocks)


SUBCOMMANDS = [
    Subcommand(
        "unallocated",
        "unallocated [YYYY-MM]",
        "/mlcost unallocated",
        "spend no model owns, and what would fix it",
        handle_unallocated,
    ),
]
