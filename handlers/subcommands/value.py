"""`/mlcost value`: record a model's value for a day, or show its unit economics."""

from __future__ import annotations

import datetime as dt

from bot.economics.unit_costs import economics_for, verdict_rules
from bot.economics.value_metrics import (
    ValueRow,
    check_metric,
    parse_revenue,
    parse_units,
    record_values,
)
from bot.errors import UsageError
from bot.periods import Period, month_period, parse_day, previous_month, trailing_days
from bot.registry.catalog import find_model
from bot.slack.blocks.economics import build_economics_blocks, format_units, month_title
from bot.slack.command_router import Invocation, Reply, subcommand
from bot.slack.mrkdwn import code, escape
from bot.slack.permissions import model_owners_or_admins

OPTIONS = ("revenue", "date")
RECORD_USAGE = (
    "usage: `/mlcost value <model> <metric> <count> [--revenue X] "
    "[--date YYYY-MM-DD]`, e.g. `/mlcost value recsys predictions 1.2m`"
)


def _options(args: list[str], names: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """Split `--name value` options from positional arguments."""
    positional: list[str] = []
    options: dict[str, str] = {}
    words = iter(args)
    for word in words:
        if word.startswith("--"):
            name = word[2:].lower()
            if name not in names:
                raise UsageError(f"unknown option {word}; use {', '.join('--' + n for n in names)}")
            value = next(words, None)
            if value is None:
                raise UsageError(f"{word} needs a value")
            options[name] = value
        else:
            positional.append(word)
    return positional, options


def _is_showing(positional: list[str], options: dict[str, str]) -> bool:
    """Return whether the words ask to show the economics (anyone may) rather than record."""
    return len(positional) <= 2 and not options


def _recorded_model(args: list[str]) -> str | None:
    """Return the model whose value the words would record (None when they only show it)."""
    positional, options = _options(args, OPTIONS)
    return None if not positional or _is_showing(positional, options) else positional[0]


@subcommand(
    "value",
    usage="value <model> <metric> <count> [--revenue X] [--date D]",
    example="/mlcost value recsys predictions 1.2m --date 2026-11-30",
    permission=model_owners_or_admins(
        _recorded_model, "Only the owners of `{model}` or an admin can record its value."
    ),
)
def handle_value(inv: Invocation) -> Reply:
    """Record a model's value for a day; `value <model>` shows its unit cost."""
    positional, options = _options(inv.args, OPTIONS)
    if not positional:
        raise UsageError(
            "usage: `/mlcost value <model> <metric> <count> [--revenue X] "
            "[--date YYYY-MM-DD]` or `/mlcost value <model> [YYYY-MM]`"
        )
    model = find_model(inv.session, positional[0])
    if _is_showing(positional, options):
        return _show_economics(inv, model.name, positional[1] if len(positional) == 2 else None)
    if len(positional) != 3:
        raise UsageError(RECORD_USAGE)
    return _record(inv, model.name, positional[1], positional[2], options)


def _record(inv: Invocation, model: str, metric: str, count: str, options: dict[str, str]) -> Reply:
    metric = check_metric(metric)
    units = parse_units(count)
    revenue = parse_revenue(options["revenue"]) if "revenue" in options else None
    today = inv.now.date()
    day = parse_day(options["date"], today) if "date" in options else today
    if day > today:
        raise UsageError(f"{day} is in the future")
    record_values(
        [ValueRow(model, day, metric, units, revenue)],
        session=inv.session,
        source="slack",
        recorded_by=inv.user_id,
    )
    money = f", revenue {revenue}" if revenue is not None else ""
    return Reply(
        text=f":white_check_mark: Recorded {format_units(units)} {escape(metric)} for "
        f"{code(model)} on {day}{money}. Recording the same day again replaces it."
    )


def _show_economics(inv: Invocation, model: str, window: str | None) -> Reply:
    if window:
        period = month_period(window)
        previous = previous_month(period)
        full = period.end <= inv.now.date()
        title = f"{model}: unit economics, {month_title(period.label)} vs the month before"
    else:
        period = trailing_days(30, inv.now.date() - dt.timedelta(days=1))
        previous = Period(period.start - dt.timedelta(days=30), period.start, "previous 30d")
        full = True
        title = f"{model}: unit economics, last 30 days vs the 30 before"
    economics = economics_for(
        session=inv.session,
        period=period,
        previous=previous,
        models=[model],
        full_period=full,
        rules=verdict_rules(inv.settings.economics),
    )
    if model not in economics:
        return Reply(text=f"{code(model)} has no cost and no value recorded in that window.")
    text, blocks = build_economics_blocks(
        [economics[model].as_json()], title, inv.settings.currency
    )
    return Reply(text=text, blocks=blocks)
