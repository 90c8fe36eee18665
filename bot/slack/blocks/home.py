"""The App Home view: a per-user dashboard (pure)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from bot.budgets.evaluate import BudgetStatus
from bot.counts import counted
from bot.money import CostBasis, format_money, format_money_places, format_percent, shown_breakdown
from bot.periods import day_words, per_suffix, period_words
from bot.slack.blocks.common import (
    basis_words,
    context,
    divider,
    forecast_phrase,
    header,
    month_words,
    section,
)
from bot.slack.guard import clip
from bot.slack.mrkdwn import code, escape, fit_lines
from bot.spend.home import HomeDashboard
from bot.waste.catalog import kind_label

MAX_MODELS = 40  # a Home view holds 100 blocks; two per model plus the frame
MAX_WASTE_LINES = 15


def build_home_view(board: HomeDashboard, currency: str) -> dict[str, Any]:
    """Return the `home` view for views.publish."""
    span = board.span
    basis = basis_words(CostBasis.BILLED)
    blocks: list[dict[str, Any]] = [
        header(f"Your models · {span.month.start:%B %Y}"),
        context(f"{basis} · {month_words(span)} · data through {day_words(span.as_of, year=True)}"),
    ]
    for line in board.models[:MAX_MODELS]:
        budget = "no budget"
        if line.budget:
            budget = (
                f"*{format_percent(line.budget_used)}* of {format_money(line.budget, currency)}"
            )
        amount = line.forecast.amount
        forecast = forecast_phrase(amount, currency)
        if line.budget and amount is not None:
            forecast += f" ({format_percent(amount * 100 / line.budget)})"
        alarm = (
            " :large_orange_circle:"
            if (line.budget and amount is not None and amount > line.budget)
            else ""
        )
        to_date = format_money(line.month_to_date, currency)
        periods = "".join(
            "\n" + period_budget_line(status, currency)
            for status in board.period_budgets
            if status.model_name == line.name
        )
        blocks.append(
            section(
                f"*{escape(clip(line.name, 80))}*"
                f"{alarm}\nMonth to date *{to_date}* · "
                f"budget {budget} · {forecast}{periods}"
            )
        )
    if len(board.models) > MAX_MODELS:
        blocks.append(section(f"…and {len(board.models) - MAX_MODELS} more models"))
    if not board.models:
        blocks.append(
            section(
                "You don't own any models yet. An owner or admin can add you: "
                "`/mlcost owner set &lt;model&gt; @you`."
            )
        )
    blocks += waste_blocks(board, currency)
    blocks += [
        divider(),
        context(
            "`/mlcost model &lt;name&gt;` for a chart · `/mlcost budget list` · `/mlcost help`"
            + (" · you are an mlcost admin" if board.admin else "")
        ),
    ]
    return {"type": "home", "blocks": blocks}


def period_budget_line(status: BudgetStatus, currency: str) -> str:
    """Say where a budget per day, week or quarter stands: `Weekly budget (week of ...)`."""
    stage = f" for {escape(status.stage)}" if status.stage else ""
    alarm = " :red_circle:" if status.reached(100) and status.amount > 0 else ""
    forecast = ""
    if status.forecast is not None:
        forecast = f" · {forecast_phrase(status.forecast.amount, currency)}"
    return (
        f"{status.period_kind.capitalize()} budget{stage} ({period_words(status.month.label)}): "
        f"*{format_money(status.month_to_date, currency)}* of "
        f"{format_money(status.amount, currency)}{per_suffix(status.period_kind)} · "
        f"*{format_percent(status.percent)}*{forecast}{alarm}"
    )


def waste_blocks(board: HomeDashboard, currency: str) -> list[dict[str, Any]]:
    """The open resource findings on the user's models: one line each, with the monthly cost."""
    open_ones = [e for e in board.waste if not e.silenced]
    if not board.waste:
        return []
    total = sum((e.monthly_cost for e in open_ones), Decimal(0))
    # the counted findings as shown add up to the total as shown; silenced ones are apart
    places, shown = shown_breakdown([e.monthly_cost for e in open_ones], total)
    amounts = iter(shown)
    lines = [
        f"• {escape(kind_label(e.kind))} {code(clip(e.resource_id, 120))} "
        f"({escape(clip(e.model or '', 80))}) — "
        + (
            f"*{format_money(e.monthly_cost, currency)}*/month · kept or marked not waste"
            if e.silenced
            else f"*{format_money_places(next(amounts), currency, places)}*/month"
        )
        for e in board.waste[:MAX_WASTE_LINES]
    ]
    more = len(board.waste) - MAX_WASTE_LINES
    body = fit_lines(lines, 2600) + (f"\n…and {more} more" if more > 0 else "")
    return [
        divider(),
        section(
            f"*Waste on your models:* {counted(len(open_ones), 'open resource finding')}, "
            f"*{format_money_places(total, currency, places)}*/month"
        ),
        section(body),
        context(
            "Each was posted to its model's channel with *Stop it* · `/mlcost waste` lists all"
        ),
    ]
