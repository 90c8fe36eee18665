"""`/mlcost unallocated [YYYY-MM]`: spend no model owns, by service and tag value."""

from __future__ import annotations

from bot.errors import UsageError
from bot.periods import month_of, month_period
from bot.slack.blocks.spend import build_unallocated_blocks
from bot.slack.command_router import Invocation, Reply, subcommand
from bot.spend.unallocated import unallocated_report


@subcommand("unallocated", usage="unallocated [YYYY-MM]", example="/mlcost unallocated")
def handle_unallocated(inv: Invocation) -> Reply:
    """Show the spend no model owns, and the tag value that would fix it."""
    if len(inv.args) > 1:
        raise UsageError("Usage: `/mlcost unallocated [YYYY-MM]`")
    period = month_period(inv.args[0]) if inv.args else month_of(inv.now.date())
    report = unallocated_report(session=inv.session, period=period, currency=inv.settings.currency)
    text, blocks = build_unallocated_blocks(report, report.currency)
    return Reply(text=text, blocks=blocks)
