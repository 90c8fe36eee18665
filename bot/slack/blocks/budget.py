"""Blocks for `/mlcost budget list|show|set`."""

from __future__ import annotations

from typing import Any

from bot.budgets.board import BudgetBoard, BudgetBoardRow
from bot.counts import counted
from bot.db.schema import Budget
from bot.money import format_money, format_percent
from bot.periods import MONTHLY, day_words, per_period, per_suffix, period_words
from bot.slack.blocks.common import (
    basis_words,
    context,
    fields,
    forecast_field,
    forecast_phrase,
    header,
    month_words,
    section,
)
from bot.slack.guard import MAX_SECTION_TEXT, clip
from bot.slack.mrkdwn import code, escape, fit_lines, user

MAX_LINES = 40


def _period_note(status: BudgetBoardRow) -> str:
    """Say a non-monthly budget's unit and current period: ` / week (week of 2026-11-23)`."""
    if status.period_kind == MONTHLY or status.period is None:
        return ""
    return f"{per_suffix(status.period_kind)} ({period_words(status.period.label)})"


def _status_line(status: BudgetBoardRow, currency: str) -> str:
    flag = ""
    if status.used is not None and status.used >= 100:
        flag = " :red_circle:"
    elif status.forecast_used is not None and status.forecast_used >= 100:
        flag = " :large_orange_circle:"
    return (
        f"• {code(clip(status.scope, 100))} {format_money(status.spent, currency)} of "
        f"{format_money(status.amount, currency)}{_period_note(status)} · "
        f"*{format_percent(status.used)}* · "
        f"{forecast_phrase(status.forecast.amount, currency)}"
        f"{'' if status.forecast_used is None else f' ({format_percent(status.forecast_used)})'}"
        f"{flag}"
        f"{_not_counted(status, ' · ')}"
    )


def _not_counted(status: BudgetBoardRow, prefix: str) -> str:
    """Say what the scope spent in other currencies, which its budget does not count."""
    if not status.not_counted:
        return ""
    amounts = ", ".join(format_money(v, iso) for iso, v in status.not_counted.items())
    return f"{prefix}not counted: {amounts} (billed in another currency)"


def build_budget_list_blocks(board: BudgetBoard, currency: str) -> tuple[str, list[dict[str, Any]]]:
    """Return every budget with spend, percent used and forecast, most used first."""
    span = board.span
    lines = [_status_line(s, s.currency) for s in board.statuses[:MAX_LINES]]
    if len(board.statuses) > MAX_LINES:
        lines.append(f"…and {len(board.statuses) - MAX_LINES} more")
    over = sum(1 for s in board.statuses if s.used is not None and s.used >= 100)
    text = (
        f"{counted(len(board.statuses), 'budget')} for {span.month.start:%B %Y} "
        f"({month_words(span)}); {over} already over."
    )
    body = (
        fit_lines(lines, MAX_SECTION_TEXT)
        or "No budgets yet. Set one: `/mlcost budget set model:recsys 12000`"
    )
    other_periods = any(s.period_kind != MONTHLY for s in board.statuses)
    spent = f"spent {month_words(span)}" + (
        " (a budget per day, week or quarter: in its own period)" if other_periods else ""
    )
    blocks = [
        header(f"Budgets · {span.month.start:%B %Y}"),
        section(body),
        context(
            f"{basis_words(board.basis)} · {spent} · :red_circle: over "
            "budget · :large_orange_circle: forecast over budget"
        ),
    ]
    return text, blocks


def build_budget_show_blocks(
    status: BudgetBoardRow, board: BudgetBoard, currency: str
) -> tuple[str, list[dict[str, Any]]]:
    """Return one budget in detail, in the budget's own currency."""
    currency = status.currency
    span = board.span
    who = user(status.updated_by) if status.updated_by else "the registry"
    # a moment, as every timestamp in Slack: `2026-11-19 09:30 UTC`
    when = f"{status.updated_at:%Y-%m-%d %H:%M} UTC" if status.updated_at else "unknown"
    kind = status.period_kind
    spent_when = month_words(span)
    if kind != MONTHLY and status.period is not None:
        spent_when = f"{period_words(status.period.label)}, data through {day_words(span.as_of)}"
    pairs = [
        (
            f"{kind.capitalize()} budget",
            f"*{format_money(status.amount, currency)}*{per_suffix(kind)}",
        ),
        (
            f"Spent ({spent_when})",
            f"{format_money(status.spent, currency)} · *{format_percent(status.used)}*",
        ),
        (
            "Month-end forecast"
            if kind == MONTHLY
            else f"Forecast to the {per_period(kind)}'s end",
            forecast_field(
                status.forecast.amount,
                status.forecast.describe(),
                currency,
                f" · {format_percent(status.forecast_used)}",
            ),
        ),
        ("Alerts at", ", ".join(f"{t} %" for t in status.thresholds) or "none"),
        ("Forecast alerts", "on" if status.forecast_alerts else "off"),
        ("Last changed", f"{who}, {when}"),
    ]
    if status.not_counted:
        pairs.insert(2, ("Other currencies", _not_counted(status, "")))
    text = (
        f"Budget {code(clip(status.scope, 250))}: {format_money(status.spent, currency)} of "
        f"{format_money(status.amount, currency)}{_period_note(status)} "
        f"({format_percent(status.used)}); "
        f"{forecast_phrase(status.forecast.amount, currency)}."
    )
    blocks = [header(f"Budget {status.scope}"), fields(pairs), context(basis_words(board.basis))]
    return text, blocks


def build_budget_set_blocks(
    budget: Budget, before: str | None, user_id: str, currency: str
) -> tuple[str, list[dict[str, Any]]]:
    """Confirm a budget change, saying who changed it and what it was."""
    amount = format_money(budget.monthly_amount, currency) + per_suffix(budget.period)
    was = f" (was {escape(before)})" if before else " (new)"
    alerts = ", ".join(f"{t} %" for t in budget.thresholds)
    text = (
        f"{user(user_id)} set the {budget.period} budget of {code(budget.scope)} to "
        f"{amount}{was}; "
        f"alerts at {alerts}."
    )
    return text, [section(f":white_check_mark: {text}")]
