"""`/mlcost gate <model>`: the release gate."""

from __future__ import annotations

from bot.economics.gate import evaluate_gate
from bot.errors import UsageError
from bot.slack.blocks.gate import build_gate_blocks
from bot.slack.command_router import Invocation, Reply, subcommand


@subcommand("gate", usage="gate <model>", example="/mlcost gate recsys")
def handle_gate(inv: Invocation) -> Reply:
    """Run the release gate: owner, budget, decisions, value, unit cost, the model's policy."""
    if len(inv.args) != 1:
        raise UsageError("usage: `/mlcost gate <model>`")
    result = evaluate_gate(
        session=inv.session,
        model_name=inv.args[0],
        as_of=inv.now.date(),
        settings=inv.settings.economics,
    )
    text, blocks = build_gate_blocks(result)
    return Reply(text=text, blocks=blocks)
