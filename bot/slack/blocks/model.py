"""Blocks for `/mlcost model`: the numbers beside the chart."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from bot.money import (
    format_money,
    format_money_places,
    format_percent,
    percent_of,
    shown_breakdown,
    shown_percents,
)
from bot.periods import day_words, days_words
from bot.slack.blocks.common import (
    basis_words,
    context,
    fields,
    forecast_field,
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
from bot.slack.mrkdwn import code, escape, fit_lines
from bot.spend.model_report import ModelReport


def build_model_report_blocks(
    report: ModelReport, currency: str
) -> tuple[str, list[dict[str, Any]]]:
    """Return the fallback text and blocks for one model's report."""
    span = report.span
    to_date = "total" if span.month_complete else "to date"
    title = f"{report.model} · team {report.team} · {span.month.start:%B %Y}"
    blocks = [
        header(title),
        fields(_summary(report, currency, to_date)),
        section(
            "*Cost by stage, month "
            + to_date
            + "*\n"
            + (
                fit_lines(_stage_lines(report, currency), MAX_SECTION_TEXT - 60)
                or "No spend this month."
            )
        ),
        section(
            "*Top resources, month "
            + to_date
            + "*\n"
            + (fit_lines(_resource_lines(report, currency), MAX_SECTION_TEXT - 60) or "None.")
        ),
        *_runs_section(report, currency, to_date),
        context(
            f"{basis_words(report.basis)} · data through {day_words(span.as_of, year=True)} · "
            f"chart window {span.window.label} · "
            f"{code(f'/mlcost model {clip(report.model, 100)} 90d')} for a longer view"
        ),
    ]
    text = _fallback_text(report, currency, to_date)
    if report.stale_data is not None:
        blocks.insert(1, stale_data_block(report.stale_data))
        text = f"{text} {stale_data_text(report.stale_data)}"
    return clip_mrkdwn(text, MAX_FALLBACK_TEXT), blocks


def _summary(report: ModelReport, currency: str, to_date: str) -> list[tuple[str, str]]:
    """Return the summary fields: month so far, budget, forecast, change, GPU-hours, who."""
    span = report.span
    money = lambda v: format_money(v, currency)  # noqa: E731
    budget_line = "no budget set"
    if report.budget:
        budget_line = f"{money(report.budget)} · *{format_percent(report.budget_used)}* used"
    used = ""
    if report.forecast_used is not None:
        used = f" · {format_percent(report.forecast_used)} of budget"
    forecast_line = forecast_field(
        report.forecast.amount, report.forecast.describe(), currency, used
    )
    change = report.change_vs_last_month
    change_line = (
        f"{signed_percent(change)} vs {money(report.last_month_same_days)} "
        f"({span.same_days_last_month().label})"
        if change is not None
        else "no spend in the same days last month"
    )
    change_line += f"\nlast month total {money(report.last_month_total)}"
    return [
        (f"Month {to_date} ({month_words(span)})", f"*{money(report.month_to_date)}*"),
        ("Budget", budget_line),
        ("Month-end forecast", forecast_line),
        ("Change vs last month", change_line),
        ("GPU-hours", f"{report.gpu_hours.quantize(Decimal(1)):,} GPU-h"),
        ("Owners", mention_users(report.owners) or "none — `/mlcost owner set`"),
        ("Channel", mention_channel(report.channel) if report.channel else "none"),
        ("Cost basis", basis_words(report.basis)),
    ]


def _stage_lines(report: ModelReport, currency: str) -> list[str]:
    """Return one line per stage: its cost, share, and use of its own budget if it has one."""
    money = lambda v: format_money(v, currency)  # noqa: E731
    # the stages' amounts as shown add up to the month's as shown
    costs = [cost for _, cost in report.by_stage]
    places, shown = shown_breakdown(costs, report.month_to_date)
    # and their shares of it add up to 100 %
    shares = shown_percents(costs, report.month_to_date)
    lines = []
    for (stage, cost), cost_shown, share in zip(report.by_stage, shown, shares, strict=True):
        amount = format_money_places(cost_shown, currency, places)
        line = f"• {escape(clip(stage, 40))}: *{amount}* ({format_percent(share)})"
        if stage in report.stage_budgets:
            used = percent_of(cost, report.stage_budgets[stage])
            line += f" · {format_percent(used)} of its {money(report.stage_budgets[stage])} budget"
        lines.append(line)
    return lines


def _resource_lines(report: ModelReport, currency: str) -> list[str]:
    """Return one line per top resource: id, service, stage and cost."""
    return [
        f"• {code(clip(r.resource, 80))} ({escape(clip(r.service, 40))}, "
        f"{escape(clip(r.stage, 40))}): *{format_money(r.cost, currency)}*"
        for r in report.top_resources
    ]


def _runs_section(report: ModelReport, currency: str, to_date: str) -> list[dict[str, Any]]:
    """Return the month's most expensive training runs as one section (none without runs)."""
    if not report.top_runs:
        return []
    lines = [
        f"• {code(clip(r.run, 80))} ({escape(clip(r.stage, 40))}, "
        f"{days_words(r.first_day, r.last_day)}): *{format_money(r.cost, currency)}* · "
        f"{r.gpu_hours.quantize(Decimal(1)):,} GPU-h"
        for r in report.top_runs
    ]
    title = f"*Most expensive runs, month {to_date}*\n"
    return [section(title + fit_lines(lines, MAX_SECTION_TEXT - 60))]


def _forecast_words(report: ModelReport, money: Callable[[Decimal], str]) -> str:
    """Return `forecast $X (method); `, or `no forecast: not enough history ...; `."""
    forecast = report.forecast
    if forecast.amount is None:
        return f"no forecast: {forecast.describe()}; "
    return f"forecast {money(forecast.amount)} ({forecast.describe()}); "


def _fallback_text(report: ModelReport, currency: str, to_date: str) -> str:
    """Return the notification text: month so far, budget use, forecast, basis."""
    money = lambda v: format_money(v, currency)  # noqa: E731
    return (
        f"{escape(report.model)}: {money(report.month_to_date)} month {to_date} "
        f"({month_words(report.span)}); "
        + (
            f"{format_percent(report.budget_used)} of its {money(report.budget)} budget; "
            if report.budget
            else "no budget; "
        )
        + _forecast_words(report, money)
        + f"{basis_words(report.basis)}."
    )
