"""Blocks for `/mlcost team` and `/mlcost top`."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from bot.counts import counted
from bot.money import format_money, format_money_places, format_percent, shown_breakdown
from bot.periods import day_words
from bot.slack.blocks.common import (
    basis_words,
    context,
    fields,
    forecast_field,
    forecast_phrase,
    header,
    mention_channel,
    mention_users,
    month_words,
    section,
    signed_percent,
    stale_data_block,
    stale_data_text,
)
from bot.slack.guard import MAX_FALLBACK_TEXT, MAX_SECTION_TEXT, clip
from bot.slack.mrkdwn import clip as clip_mrkdwn
from bot.slack.mrkdwn import escape, fit_lines
from bot.spend.team_report import GROWTH_FLOOR, ModelLine, TeamReport, TopModels

MAX_LINES = 25


def _model_line(rank: int, line: ModelLine, currency: str, shown: str | None = None) -> str:
    """Return a ranked model's line; `shown` is its amount as the list shows it, if rounded
    to add up to a total shown with it."""
    money = shown if shown is not None else format_money(line.month_to_date, currency)
    parts = [f"{rank}. *{escape(clip(line.name, 60))}* {money}"]
    if line.change is not None:
        parts.append(f"{signed_percent(line.change)} vs last month")
    elif line.month_to_date > 0:
        parts.append("new this month")
    if line.budget:
        parts.append(f"{format_percent(line.budget_used)} of {format_money(line.budget, currency)}")
    parts.append(forecast_phrase(line.forecast.amount, currency))
    return " · ".join(parts)


def build_team_report_blocks(report: TeamReport, currency: str) -> tuple[str, list[dict[str, Any]]]:
    """Return the fallback text and blocks for a team's ranked models."""
    span, total = report.span, report.total
    money = lambda v: format_money(v, currency)  # noqa: E731
    budget = (
        f"{money(total.budget)} · *{format_percent(total.budget_used)}* used"
        if total.budget
        else "no team budget"
    )
    summary = [
        (f"Month to date ({month_words(span)})", f"*{money(total.month_to_date)}*"),
        ("Budget", budget),
        (
            "Month-end forecast",
            forecast_field(total.forecast.amount, total.forecast.describe(), currency),
        ),
        (
            "Change vs last month",
            f"{signed_percent(total.change)} vs {money(total.last_month_same_days)}",
        ),
        ("Owners", mention_users(report.owners) or "none"),
        ("Channel", mention_channel(report.channel) if report.channel else "none"),
    ]
    # the models' amounts as shown add up to the month's as shown
    places, shown = shown_breakdown([m.month_to_date for m in report.models], total.month_to_date)
    ranked = [
        _model_line(i, line, currency, format_money_places(amount, currency, places))
        for i, (line, amount) in enumerate(zip(report.models[:MAX_LINES], shown, strict=False), 1)
    ]
    if len(report.models) > MAX_LINES:  # summed, so the lines add up to the month's
        rest = format_money_places(sum(shown[MAX_LINES:], Decimal(0)), currency, places)
        ranked.append(f"…and {len(report.models) - MAX_LINES} more models: {rest}")
    text = (
        f"Team {escape(clip(report.team, 100))}: {money(total.month_to_date)} month to date "
        f"across {counted(len(report.models), 'model')}; "
        f"{forecast_phrase(total.forecast.amount, currency)}; "
        f"{basis_words(report.basis)}."
    )
    blocks = [
        header(f"team {report.team} · {span.month.start:%B %Y}"),
        fields(summary),
        section(
            "*Models, ranked by month-to-date spend*\n"
            + (fit_lines(ranked, MAX_SECTION_TEXT - 60) or "No models.")
        ),
        context(
            f"{basis_words(report.basis)} · data through {day_words(span.as_of, year=True)} · "
            "`/mlcost model &lt;name&gt;` for one model's detail"
        ),
    ]
    if report.stale_data is not None:
        blocks.insert(1, stale_data_block(report.stale_data))
        text = f"{text} {stale_data_text(report.stale_data)}"
    return clip_mrkdwn(text, MAX_FALLBACK_TEXT), blocks


def build_top_blocks(top: TopModels, currency: str) -> tuple[str, list[dict[str, Any]]]:
    """Return the fallback text and blocks for the biggest and fastest-growing models."""
    span = top.span
    biggest = [_model_line(i, line, currency) for i, line in enumerate(top.biggest, 1)]
    growing = [_model_line(i, line, currency) for i, line in enumerate(top.growing, 1)]
    text = (
        f"Top {len(top.biggest)} {'model' if len(top.biggest) == 1 else 'models'} "
        f"{month_words(span)}: "
        + ", ".join(
            f"{escape(clip(line.name, 60))} {format_money(line.month_to_date, currency)}"
            for line in top.biggest[:5]
        )
        + f"; {basis_words(top.basis)}."
    )
    blocks = [
        header(f"Biggest and fastest-growing models · {span.month.start:%B %Y}"),
        section(
            f"*Biggest, month to date ({month_words(span)})* — all models "
            f"{format_money(top.total, currency)}\n"
            + (fit_lines(biggest, MAX_SECTION_TEXT - 200) or "No spend yet.")
        ),
        section(
            f"*Fastest-growing vs the same days last month* (at least "
            f"{format_money(GROWTH_FLOOR, currency)} this month)\n"
            + (fit_lines(growing, MAX_SECTION_TEXT - 200) or "No model is growing.")
        ),
        context(f"{basis_words(top.basis)} · data through {day_words(span.as_of, year=True)}"),
    ]
    return clip_mrkdwn(text, MAX_FALLBACK_TEXT), blocks
