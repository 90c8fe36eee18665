"""Spend subcommands that read the ledger."""

from __future__ import annotations

from bot.blocks.spend import build_unallocated_blocks
from bot.periods import month_of
from bot.reports import spend_report
from bot.slack.command_router import Invocation, Reply, Subcommand


def handle_unallocated(inv: Invocation) -> Reply:
    """Spend with no owner this month, by service and the tag value that would fix it."""
    period = month_of(inv.now.date())
    report = spend_report(session=inv.session, period=period,
                          by=["service", "team"], where={"model": None})  # fmt: skip
    text, blocks = build_unallocated_blocks(report, inv.settings.currency)
    return Reply(text=text, blocks=blocks)


SUBCOMMANDS = [
    Subcommand("unallocated", "unallocated", "/mlcost unallocated",
               "spend no model owns, and what would fix it", handle_unallocated),
]  # fmt: skip
