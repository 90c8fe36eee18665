"""`/mlcost team <name> [window]` and `/mlcost top [n]`."""

from __future__ import annotations

import re

from bot.errors import UsageError
from bot.slack.blocks.team import build_team_report_blocks, build_top_blocks
from bot.slack.command_args import clip_word, cost_basis, split_options
from bot.slack.command_router import Invocation, Reply, subcommand
from bot.spend.team_report import team_chart, team_report, top_models
from handlers.subcommands.spend_reply import chart_reply, report_args

TEAM_USAGE = "team <name> [30d|90d|YYYY-MM] [--cost effective]"
TOP_USAGE = "top [n] [--cost effective]"
MAX_TOP = 25


@subcommand("team", usage=TEAM_USAGE, example="/mlcost team ranking")
def handle_team_command(inv: Invocation) -> Reply:
    """Rank a team's models by spend, with a chart stacked by model."""
    words, options = split_options(inv.args, ["--cost"])
    if not words or len(words) > 2:
        raise UsageError(f"Usage: `/mlcost {TEAM_USAGE}`, e.g. `/mlcost team ranking`")
    report = team_report(**report_args(inv, words, options))
    text, blocks = build_team_report_blocks(report, report.currency)
    return chart_reply(
        text,
        blocks,
        team_chart(report, report.currency),
        filename=f"mlcost-team-{report.team}.png",
        title=f"team {report.team}: daily spend by model",
    )


@subcommand("top", usage=TOP_USAGE, example="/mlcost top 10")
def handle_top_command(inv: Invocation) -> Reply:
    """Show the biggest and the fastest-growing models this month."""
    words, options = split_options(inv.args, ["--cost"])
    count = 10
    if len(words) > 1 or (words and not re.fullmatch(r"[0-9]{1,3}", words[0])):
        raise UsageError(
            f"Usage: `/mlcost {TOP_USAGE}`; `{clip_word(' '.join(words))}` is not "
            "a number of models"
        )
    if words:
        count = int(words[0])
        if not 1 <= count <= MAX_TOP:
            raise UsageError(f"`top` shows 1 to {MAX_TOP} models")
    top = top_models(
        session=inv.session,
        today=inv.now.date(),
        count=count,
        basis=cost_basis(options),
        currency=inv.settings.currency,
    )
    text, blocks = build_top_blocks(top, top.currency)
    return Reply(text=text, blocks=blocks)
