"""`/mlcost model <name> [30d|90d|YYYY-MM] [--cost billed|effective]`."""

from __future__ import annotations

from bot.errors import UsageError
from bot.slack.blocks.model import build_model_report_blocks
from bot.slack.charts.spend_chart import render_spend_chart
from bot.slack.command_args import clip_word, cost_basis, split_options
from bot.slack.command_router import ChartFile, Invocation, Reply, subcommand
from bot.spend.model_report import model_chart, model_report

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
    report = model_report(
        session=inv.session,
        name=words[0],
        today=inv.now.date(),
        window=words[1] if len(words) > 1 else None,
        basis=cost_basis(options),
        currency=inv.settings.currency,
    )
    currency = report.currency
    text, blocks = build_model_report_blocks(report, currency)
    spec = model_chart(report, currency)
    label = report.span.window.label
    chart = ChartFile(
        f"mlcost-{report.model}-{label}.png",
        f"{report.model}: daily spend by stage ({label})",
        render=lambda: render_spend_chart(spec),  # after the transaction: rendering is slow
    )
    return Reply(text=text, blocks=blocks, in_channel=True, charts=[chart])
