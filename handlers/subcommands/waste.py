"""`/mlcost waste [team|model]`: idle, orphaned and stale spend, right-sizing, resource findings."""

from __future__ import annotations

from bot.errors import UsageError
from bot.slack.blocks.waste import overview_blocks
from bot.slack.command_args import clip_word
from bot.slack.command_router import Invocation, Reply, subcommand
from bot.waste.findings import overview_for, waste_overview

USAGE = "waste [team|model]"


@subcommand("waste", usage=USAGE, example="/mlcost waste ranking")
def handle_waste(inv: Invocation) -> Reply:
    """List waste from the ledger and the account scans, ranked by monthly cost, and savings.

    Ledger: idle, orphaned and stale spend, Spot candidates, serving that does not scale;
    scans: open resource findings; closed ones say what they saved so far.
    """
    if len(inv.args) > 1:
        raise UsageError(
            f"Usage: `/mlcost {USAGE}`; `{clip_word(' '.join(inv.args))}` is more than one name"
        )
    # a broken Spot feed is the operator's to fix (logged); users still get the other findings
    overview = waste_overview(
        session=inv.session,
        settings=inv.settings.waste,
        as_of=inv.now.date(),
        now=inv.now,
        strict=False,
    )
    if inv.args:  # a team's or model's; unowned findings show only in the whole view
        overview = overview_for(inv.session, overview, inv.args[0])
    text, blocks = overview_blocks(overview)
    return Reply(text=text, blocks=blocks)
