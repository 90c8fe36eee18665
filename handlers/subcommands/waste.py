"""`/mlcost waste`: orphaned spend, idle endpoints, stale checkpoints, killed models."""

from __future__ import annotations

from bot.blocks.waste import build_waste_blocks
from bot.slack.command_router import Invocation, Reply, Subcommand
from bot.waste import find_configured_waste


def handle_waste(inv: Invocation) -> Reply:
    """List this week's waste findings, largest first."""
    findings = find_configured_waste(
        session=inv.session, settings=inv.settings, as_of=inv.now.date()
    )
    text, blocks = build_waste_blocks(findings, inv.settings.currency)
    return Reply(text=text, blocks=blocks)


SUBCOMMANDS = [
    Subcommand("waste", "waste", "/mlcost waste",
               "idle endpoints, orphaned resources, stale checkpoints, killed models still "
               "spending", handle_waste),
]  # fmt: skip
