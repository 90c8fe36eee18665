"""`/mlcost model <name> [30d|90d|YYYY-MM] [--cost billed|effective]`."""

from __future__ import annotations

from bot.errors import UsageError
from bot.slack.blocks.model import build_model_report_blocks
from bot.slack.command_args import clip_word, split_options
from bot.slack.command_router import Invocation, Reply, subcommand
from bot.spend.model_report import model_chart, model_report
from handlers.subcommands.spend_reply import chart_reply, report_args

USAGE = "model <name> [30d|90d|YYYY-MM] [--cost effective]"


@subcommand("model", usage=USAGE, example="/mlcost model recsys 30d")
def handle_model_command(inv: Invocation) -> Reply:
    """Show a model's spend: chart by stage, budget, forecast, top resources."""
    words, options = split_options(inv.args, ["--cost"])
    if not words:
        raise UsageError(f"which model? Usage: `/mlcost {USAGE}`, e.g. `/mlcost model recsys`")
    if len(words) > 2:
        extra = " ".join(clip_word(w) for w in words[2:])
        raise UsageError(f"unexpected `{clip_word(extra)}`. Usage: `/mlcost {USAGE}`")
    report = model_report(**report_args(inv, words, options))
    text, blocks = build_model_report_blocks(report, report.currency)
    label = report.span.window.label
    return chart_reply(
        text,
        blocks,
        model_chart(report, report.currency),
        filename=f"mlcost-{report.model}-{label}.png",
        title=f"{report.model}: daily spend by stage ({label})",
    )
