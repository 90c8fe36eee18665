"""`/mlcost value`, `/mlcost review` and `/mlcost gate`: unit economics, the review, the gate."""

from __future__ import annotations

import datetime as dt
from typing import Any

from bot.db.engine import session_scope
from bot.economics.gate import evaluate_gate
from bot.economics.unit_costs import economics_for, verdict_rules
from bot.economics.value_metrics import (
    ValueRow,
    check_metric,
    parse_revenue,
    parse_units,
    record_values,
)
from bot.errors import PermissionDenied, UsageError
from bot.notify.outbox import HistoryLookup
from bot.periods import Period, month_of, month_period, previous_month, trailing_days
from bot.registry.catalog import can_manage_model, find_model
from bot.review.delivery import post_reviews
from bot.review.summary import may_post_reviews, review_status
from bot.slack.blocks.economics import build_economics_blocks, format_units, month_title
from bot.slack.command_router import Invocation, Reply, Subcommand
from bot.slack.guard import MAX_FALLBACK_TEXT, MAX_SECTION_TEXT
from bot.slack.mrkdwn import bold, clip, code, escape, fit_lines
from bot.slack.mrkdwn import channel as mention_channel
from bot.slack.notifier import SlackNotifier


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


def handle_value(inv: Invocation) -> Reply:
    """Record a model's value for a day, or show its unit economics."""
    positional, options = _options(inv.args, ("revenue", "date"))
    if not positional:
        raise UsageError(
            "usage: `/mlcost value <model> <metric> <count> [--revenue X] "
            "[--date YYYY-MM-DD]` or `/mlcost value <model> [YYYY-MM]`"
        )
    model = find_model(inv.session, positional[0])
    if len(positional) <= 2 and not options:
        return _show_economics(inv, model.name, positional[1] if len(positional) == 2 else None)
    if len(positional) != 3:
        raise UsageError(
            "usage: `/mlcost value <model> <metric> <count> [--revenue X] "
            "[--date YYYY-MM-DD]`, e.g. `/mlcost value recsys predictions 1.2m`"
        )
    if not can_manage_model(inv.session, inv.user_id, model):
        raise PermissionDenied(
            f"Only the owners of `{model.name}` or an admin can record its value."
        )
    metric = check_metric(positional[1])
    units = parse_units(positional[2])
    revenue = parse_revenue(options["revenue"]) if "revenue" in options else None
    today = inv.now.date()
    try:
        day = dt.date.fromisoformat(options["date"]) if "date" in options else today
    except ValueError:
        raise UsageError(f"{options['date']!r} is not a date; use YYYY-MM-DD") from None
    if day > today:
        raise UsageError(f"{day} is in the future")
    record_values(
        [ValueRow(model.name, day, metric, units, revenue)],
        session=inv.session,
        source="slack",
        recorded_by=inv.user_id,
    )
    money = f", revenue {revenue}" if revenue is not None else ""
    return Reply(
        text=f":white_check_mark: Recorded {format_units(units)} {escape(metric)} for "
        f"{code(model.name)} on {day}{money}. Recording the same day again replaces it."
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
        rules=verdict_rules(inv.settings),
    )
    if model not in economics:
        return Reply(text=f"{code(model)} has no cost and no value recorded in that window.")
    text, blocks = build_economics_blocks(
        [economics[model].as_json()], title, inv.settings.currency
    )
    return Reply(text=text, blocks=blocks)


def handle_review(inv: Invocation) -> Reply:
    """Post a month's review to the team channels the user may post to (once per team)."""
    if len(inv.args) > 1:
        raise UsageError("usage: `/mlcost review [YYYY-MM]`")
    month = month_period(inv.args[0]) if inv.args else previous_month(month_of(inv.now.date()))
    if month.end > inv.now.date():
        raise UsageError(f"{month.label} is not over yet; review a finished month")
    teams = may_post_reviews(inv.session, inv.user_id)
    if teams is not None and not teams:
        raise PermissionDenied("Only team owners or an admin can post a review.")
    services = inv.services
    if services is None:
        raise UsageError("reviews can only be posted from the running app")
    report = post_reviews(
        session_factory=services.session_factory,
        notifier=SlackNotifier(services.client),
        month=month,
        settings=services.settings,
        now=inv.now,
        find_posted=HistoryLookup(services.client),
        teams=teams,
        clock=services.clock,
    )
    with session_scope(services.session_factory) as session:
        status = [
            (r.team_name, r.channel, decided, total)
            for r, decided, total in review_status(session=session, month=month.label)
            if teams is None or r.team_name in teams
        ]
    if not status:
        return Reply(text=f"No team had model spend in {month.label}: nothing to review.")
    opened = {key.rsplit(":", 1)[-1] for key in report.opened}
    lines = [
        f"• {escape(team)} in {mention_channel(channel)}: "
        + ("posted now" if team in opened else "already posted")
        + f", {decided} of {total} decided"
        for team, channel, decided, total in status
    ]
    if report.failed:
        lines.append(
            f":warning: {len(report.failed)} message(s) not delivered yet; the review "
            "job retries them."
        )
    return Reply(text=f"*Review {month_title(month.label)}*\n" + "\n".join(lines))


def handle_gate(inv: Invocation) -> Reply:
    """Run the release gate for a model."""
    if len(inv.args) != 1:
        raise UsageError("usage: `/mlcost gate <model>`")
    result = evaluate_gate(
        session=inv.session, model_name=inv.args[0], as_of=inv.now.date(), settings=inv.settings
    )
    head = (
        f":white_check_mark: {bold(result.model)} passes the release gate"
        if result.passed
        else f":no_entry: {bold(result.model)} fails the release gate"
    )
    lines = [
        f"{':white_check_mark:' if c.passed else ':x:'} {bold(c.name)}: {escape(c.detail)}"
        for c in result.checks
    ]
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": head}},
        {"type": "section", "text": {"type": "mrkdwn", "text": fit_lines(lines, MAX_SECTION_TEXT)}},
        {
            "type": "context",
            "elements": [
                {"type": "mrkdwn", "text": f"In CI: {code(f'mlcost gate {result.model}')}"}
            ],
        },
    ]
    text = clip(head + "\n" + "\n".join(lines), MAX_FALLBACK_TEXT)
    return Reply(text=text, blocks=blocks)


SUBCOMMANDS = [
    Subcommand(
        "value",
        "value <model> <metric> <count> [--revenue X] [--date D]",
        "/mlcost value recsys predictions 1.2m --date 2026-11-30",
        "record a model's value for a day; `value <model>` shows its unit cost",
        handle_value,
    ),
    Subcommand(
        "review",
        "review [YYYY-MM]",
        "/mlcost review 2026-11",
        "post the monthly kill-or-keep review to each team's channel",
        handle_review,
    ),
    Subcommand(
        "gate",
        "gate <model>",
        "/mlcost gate recsys",
        "the release gate: owner, budget, decisions, unit cost",
        handle_gate,
    ),
]
