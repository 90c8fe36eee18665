"""`/mlcost waste [team|model]`: idle, orphaned and stale spend, and right-sizing."""

from __future__ import annotations

from bot.errors import UsageError
from bot.slack.blocks.waste import build_waste_blocks
from bot.slack.command_args import clip_word
from bot.slack.command_router import Invocation, Reply, subcommand
from bot.waste.findings import find_configured_waste, findings_for

USAGE = "waste [team|model]"


@subcommand("waste", usage=USAGE, example="/mlcost waste ranking")
def handle_waste(inv: Invocation) -> Reply:
    """List idle, orphaned and stale spend, Spot candidates and serving that does not scale."""
    if len(inv.args) > 1:
        raise UsageError(
            f"Usage: `/mlcost {USAGE}`; `{clip_word(' '.join(inv.args))}` is more than one name"
        )
    # a broken Spot feed is the operator's to fix (logged); users still get the other findings
    findings = find_configured_waste(
        session=inv.session, settings=inv.settings, as_of=inv.now.date(), strict=False
    )
    if inv.args:
        findings = findings_for(inv.session, findings, inv.args[0])
    text, blocks = build_waste_blocks(findings, inv.settings.currency)
    return Reply(text=text, blocks=blocks)
