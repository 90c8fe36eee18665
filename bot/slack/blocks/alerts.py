"""Blocks for budget, anomaly and unallocated alerts, their buttons and the Raise budget modal."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any, Protocol

from bot.anomalies.detect import GPU_HOURS, Anomaly
from bot.anomalies.drivers import Driver as SpendDriver
from bot.anomalies.drivers import dimension_label
from bot.budgets.drivers import Driver
from bot.budgets.evaluate import BudgetStatus
from bot.budgets.messages import AlertContext
from bot.budgets.plan import ACTUAL, EXCEEDED, BudgetAlert
from bot.money import (
    format_money,
    format_money_places,
    format_percent,
    shown_breakdown,
    shown_percents,
)
from bot.periods import (
    DAILY,
    MONTHLY,
    day_words,
    per_period,
    per_suffix,
    period_kind_of_label,
    period_words,
)
from bot.slack.guard import (
    MAX_CONTEXT_TEXT,
    MAX_FALLBACK_TEXT,
    MAX_FIELD_TEXT,
    MAX_HEADER,
    MAX_SECTION_TEXT,
    clip,
)
from bot.slack.mrkdwn import clip as clip_mrkdwn
from bot.slack.mrkdwn import code, escape, fit_lines, users

ACK_ACTION = "budget_ack"
SNOOZE_ACTION = "budget_snooze"
RAISE_ACTION = "budget_raise"
RAISE_CALLBACK = "budget_raise_submit"
ACTIONS_BLOCK = "budget_alert_actions"
EXPECTED_ACTION = "anomaly_expected"
NOT_EXPECTED_ACTION = "anomaly_not_expected"
ANOMALY_ACTIONS_BLOCK = "anomaly_actions"
AMOUNT_BLOCK = "amount"

Blocks = list[dict[str, Any]]


def _section(text: str) -> dict[str, Any]:
    return {
        "type": "section",
        "text": {"type": "mrkdwn", "text": clip_mrkdwn(text, MAX_SECTION_TEXT)},
    }


def _context(text: str) -> dict[str, Any]:
    text = clip_mrkdwn(text, MAX_CONTEXT_TEXT)
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": clip(text, MAX_HEADER)}}


def _mentions(owners: Iterable[str]) -> str:
    return users(sorted(owners), " ")


def command_hint(scope: str) -> str:
    """Return the slash command that shows a budget scope in detail."""
    head = scope.split("/")[0]
    kind, _, name = head.partition(":")
    if kind in ("model", "team"):
        return f"/mlcost {kind} {name}"
    return "/mlcost top"


def _driver_field(
    title: str, drivers: list[Driver], currency: str, total: Decimal
) -> dict[str, Any]:
    # drivers that make up the whole (every stage, every day) add up to the total as shown,
    # and their shares to 100 %
    costs = [driver.cost for driver in drivers]
    places, shown = shown_breakdown(costs, total)
    shares = shown_percents(costs, total)
    lines = []
    for driver, cost, percent in zip(drivers, shown, shares, strict=True):
        share = f" ({format_percent(percent)})" if total > 0 else ""
        amount = format_money_places(cost, currency, places)
        lines.append(f"{escape(clip(driver.label, 60))}: {amount}{share}")
    body = fit_lines(lines, MAX_FIELD_TEXT - len(title) - 3) if drivers else "–"
    return {"type": "mrkdwn", "text": f"*{title}*\n{body}"}


def build_budget_alert(alert: BudgetAlert, ctx: AlertContext) -> tuple[str, Blocks]:
    """Render a budget alert: what crossed, by how much, the forecast, drivers and buttons."""
    status = alert.status
    money = lambda value: format_money(value, ctx.currency)  # noqa: E731
    phrase, icon, how_much = _budget_crossing(alert, money)
    headline = f"{status.scope} {phrase}"  # plain text: the header
    headline_md = f"{escape(clip(status.scope, 200))} {phrase}"
    total = status.month_to_date
    blocks: Blocks = [
        _header(headline),
        _section(f"{icon} " + "\n".join(_budget_lines(alert, ctx, money, how_much))),
        {
            "type": "section",
            "fields": [
                _driver_field("Top stages", ctx.drivers.stages, ctx.currency, total),
                _driver_field("Top resources", ctx.drivers.resources, ctx.currency, total),
                _driver_field("Biggest days", ctx.drivers.days, ctx.currency, total),
            ],
        },
        _context(
            f"Details: {code(command_hint(status.scope))} · {escape(ctx.basis)} cost · as of "
            f"{day_words(status.as_of, year=True)}"
        ),
        _budget_buttons(alert),
    ]
    text = _budget_fallback(alert, f"{icon} {headline_md}", money)
    return clip_mrkdwn(text, MAX_FALLBACK_TEXT), blocks


def budget_name(status: BudgetStatus) -> str:
    """Name a budget's current period: `2026-11 budget`, `weekly budget (week of 2026-11-23)`."""
    if status.period_kind == MONTHLY:
        return f"{status.month.label} budget"
    return f"{status.period_kind} budget ({period_words(status.month.label)})"


def _budget_crossing(alert: BudgetAlert, money: Callable[[Decimal], str]) -> tuple[str, str, str]:
    """Return (what crossed, its icon, how far past the line or how far to go)."""
    status = alert.status
    name = budget_name(status)
    if alert.kind == ACTUAL and alert.threshold >= EXCEEDED:
        over = status.month_to_date - status.amount * alert.threshold / 100
        phrase = (
            f"is over its {name}"
            if alert.threshold == EXCEEDED
            else f"passed {alert.threshold} % of its {name}"
        )
        return phrase, ":red_circle:", f"*{money(over)}* past the {alert.threshold} % line"
    if alert.kind == ACTUAL:
        over = status.month_to_date - status.amount * alert.threshold / 100
        phrase = f"passed {alert.threshold} % of its {name}"
        return phrase, ":warning:", f"{money(over)} past the {alert.threshold} % line"
    phrase = f"is forecast to pass {alert.threshold} % of its {name}"
    to_go = money(status.amount * alert.threshold / 100 - status.month_to_date)
    return phrase, ":crystal_ball:", f"{to_go} to go"


def _budget_lines(
    alert: BudgetAlert, ctx: AlertContext, money: Callable[[Decimal], str], how_much: str
) -> list[str]:
    """Return the alert's body: spend against the budget, the forecast, the owners."""
    status = alert.status
    through = day_words(status.as_of)
    kind, unit = status.period_kind, per_period(status.period_kind)
    spent_in = "" if kind == MONTHLY else f" in the {period_words(status.month.label)}"
    if kind == DAILY:
        spent_in, through = f" on {status.as_of:%a %b %-d}", ""
    lines = [
        f"*{money(status.month_to_date)}* spent{spent_in}"
        f"{f' through {through}' if through else ''} of a "
        f"*{money(status.amount)}{per_suffix(kind)}* budget: "
        f"*{format_percent(status.percent)}*, {how_much}."
    ]
    forecast = status.forecast
    if forecast is not None and forecast.amount is None:
        lines.append(f"Forecast for the {unit}: {forecast.method}.")  # not enough history
    elif forecast is not None and forecast.amount is not None:
        lines.append(
            f"Forecast for the {unit}: *{money(forecast.amount)}* "
            f"({format_percent(status.forecast_percent)}), {forecast.method}."
        )
    elif kind == DAILY:
        lines.append("No forecast for a daily budget: its day is complete when it is checked.")
    else:
        lines.append(
            f"No forecast yet: only {max(0, (status.as_of - status.month.start).days + 1)}"
            f" days of this {unit} are known."
        )
    if ctx.owners:
        lines.append(f"Owners: {_mentions(ctx.owners)}")
    return lines


def _budget_fallback(alert: BudgetAlert, lead: str, money: Callable[[Decimal], str]) -> str:
    """Return the notification text: spend (or the forecast) against the budget."""
    status = alert.status
    spent, budget = (
        money(status.month_to_date),
        money(status.amount) + per_suffix(status.period_kind),
    )
    if alert.kind == ACTUAL or status.forecast is None or status.forecast.amount is None:
        return f"{lead}: {spent} of {budget} ({format_percent(status.percent)})."
    return (
        f"{lead}: forecast {money(status.forecast.amount)} of {budget} "
        f"({format_percent(status.forecast_percent)}), {spent} spent so far."
    )


def _budget_buttons(alert: BudgetAlert) -> dict[str, Any]:
    """Return the Acknowledge, Snooze and Raise buttons, each carrying the alert's outbox key
    (the handlers read its scope and period from the outbox, not from the click)."""
    value = json.dumps({"key": alert.dedupe_key}, ensure_ascii=False)
    buttons = [
        (ACK_ACTION, "Acknowledge", None),
        (SNOOZE_ACTION, "Snooze 7 days", None),
        (RAISE_ACTION, "Raise budget", "primary"),
    ]
    elements = []
    for action_id, label, style in buttons:
        button: dict[str, Any] = {"type": "button", "action_id": action_id, "value": value}
        if style:
            button["style"] = style
        button["text"] = {"type": "plain_text", "text": label}
        elements.append(button)
    return {"type": "actions", "block_id": ACTIONS_BLOCK, "elements": elements}


def build_anomaly_alert(anomaly: Anomaly, ctx: AlertContext) -> tuple[str, Blocks]:
    """Render an anomaly: the day against its baseline, the excess, its drivers, the answers."""
    money = lambda value: format_money(value, ctx.currency)  # noqa: E731
    day = day_words(anomaly.day)
    baseline = anomaly.baseline
    if anomaly.kind == "gpu":
        phrase = f"GPU-hours of {{}} jumped on {day}"
        body = (
            f"*{anomaly.value:,.1f} GPU-hours* against a usual {baseline.median:,.1f} "
            f"(median of {baseline.days} days), about *{money(anomaly.excess_cost)}* more, and "
            "the model's workload does not explain it: look for orphaned pods, retry loops or "
            "daemon jobs."
        )
    else:
        phrase = f"Unusual spend for {{}} on {day}"
        body = (
            f"*{money(anomaly.value)}* against a usual {money(baseline.median)} "
            f"(median of {baseline.days} days, normal up to {money(baseline.ceiling)}): "
            f"*{money(anomaly.excess_cost)}* more than usual."
        )
        if anomaly.expected > 0:
            body += (
                f" {money(anomaly.expected)} of it was answered Expected this month; "
                "the rest is beyond what was expected."
            )
    headline = phrase.format(anomaly.scope)  # plain text: the header
    headline_md = phrase.format(escape(clip(anomaly.scope, 200)))
    lines = [body]
    owners = f"Owners: {_mentions(ctx.owners)}" if ctx.owners else ""
    if anomaly.resources:
        increases = []
        for resource, growth, new in anomaly.resources:
            note = " (new: not seen in the baseline)" if new else ""
            increases.append(f"• {code(clip(resource, 120))} +{growth:,.1f} GPU-hours{note}")
        room = MAX_SECTION_TEXT - len(body) - len(owners) - 100
        lines.append("Largest increases:\n" + fit_lines(increases, room))
    if anomaly.drivers:
        drivers = [_driver_line(d, money) for d in anomaly.drivers]
        room = MAX_SECTION_TEXT - len(body) - len(owners) - 100
        lines.append("Drivers (against their own usual day):\n" + fit_lines(drivers, room))
    run_line = _driving_run_line(anomaly, money)
    if run_line:
        lines.append(run_line)
    if owners:
        lines.append(owners)
    run_note = f" Driven by run {code(clip(anomaly.run.run, 120))}." if anomaly.run else ""
    text = f":rotating_light: {headline_md}: {money(anomaly.excess_cost)} above usual.{run_note}"
    blocks: Blocks = [
        _header(headline),
        _section(":rotating_light: " + "\n".join(lines)),
        _context(f"Details: {code(command_hint(anomaly.scope))} · {escape(ctx.basis)} cost"),
    ]
    if anomaly.kind == "spend":
        if anomaly.drivers:
            top = anomaly.drivers[0]
            blocks.append(
                _context(
                    f"Expected accepts {_driver_name(top)} up to {money(top.amount)} a day "
                    f"until the end of {anomaly.day:%B}; more than that still alerts. "
                    "Owners and admins answer."
                )
            )
        blocks.append(_anomaly_buttons(anomaly))
    elif anomaly.kind == "gpu":
        blocks.append(
            _context(
                f"Expected accepts {code(clip(anomaly.scope, 200))}'s GPU-hours up to "
                f"{anomaly.value:,.1f} a day until the end of {anomaly.day:%B}; more than that "
                "still alerts. Owners and admins answer."
            )
        )
        blocks.append(_anomaly_buttons(anomaly))
    return clip_mrkdwn(text, MAX_FALLBACK_TEXT), blocks


def _driver_name(driver: SpendDriver) -> str:
    """Return `resource `i-abc`` (mrkdwn, the value escaped inside code)."""
    return f"{dimension_label(driver.dimension)} {code(clip(driver.value, 120))}"


def _driver_line(driver: SpendDriver, money: Callable[[Decimal], str]) -> str:
    return (
        f"• {_driver_name(driver)}: {money(driver.amount)} "
        f"(usual {money(driver.usual)}, +{money(driver.rise)})"
    )


def _anomaly_buttons(anomaly: Anomaly) -> dict[str, Any]:
    """Return the Expected and Not expected buttons, each carrying the anomaly's key and amount."""
    value = json.dumps(
        {
            "key": anomaly.dedupe_key,
            "amount": f"{anomaly.value:f}",
            "excess": f"{anomaly.excess_cost:f}",
        },
        ensure_ascii=False,
    )
    elements = [
        {
            "type": "button",
            "action_id": EXPECTED_ACTION,
            "value": value,
            "style": "primary",
            "text": {"type": "plain_text", "text": "Expected"},
        },
        {
            "type": "button",
            "action_id": NOT_EXPECTED_ACTION,
            "value": value,
            "text": {"type": "plain_text", "text": "Not expected"},
        },
    ]
    return {"type": "actions", "block_id": ANOMALY_ACTIONS_BLOCK, "elements": elements}


class AnsweredAnomaly(Protocol):
    """What an anomaly's recorded answer carries (bot.db.schema.AnomalyExpectation)."""

    answer: str
    user_id: str
    at: dt.datetime
    scope: str
    dimension: str | None
    value: str | None
    level: Decimal | None
    anomaly_day: dt.date
    currency: str


def answered_note_for(row: AnsweredAnomaly, owners: Iterable[str] = ()) -> str:
    """Say who answered an anomaly and what it means, from its recorded answer."""
    return anomaly_answered_note(
        row.answer,
        row.user_id,
        row.at,
        row.scope,
        dimension=row.dimension,
        value=row.value,
        level=row.level,
        month=row.anomaly_day.strftime("%B"),
        currency=row.currency,
        owners=owners,
    )


def anomaly_answered_note(
    answer: str,
    user_id: str,
    when: dt.datetime,
    scope: str,
    *,
    dimension: str | None,
    value: str | None,
    level: Decimal | None,
    month: str,
    currency: str,
    owners: Iterable[str] = (),
) -> str:
    """Say who answered an anomaly and what it means (mrkdwn, for replace_actions)."""
    who = f"{users([user_id])} on {format_when(when)}"
    driver = (
        f"{dimension_label(dimension)} {code(clip(value, 120))}"
        if dimension is not None and value is not None
        else None
    )
    if answer == "expected" and dimension == GPU_HOURS and level is not None:
        return (
            f":white_check_mark: Expected, said {who}: GPU-hours of {code(clip(scope, 200))} "
            f"up to {level:,.1f} a day do not alert again until the end of {escape(month)}."
        )
    if dimension == GPU_HOURS:
        driver = f"GPU-hours of {code(clip(scope, 200))}"
    if answer == "expected":
        if driver is None or level is None:
            return f":white_check_mark: Expected, said {who}. No driver rose that day."
        return (
            f":white_check_mark: Expected, said {who}: {driver} up to "
            f"{format_money(level, currency)} a day does not alert again for "
            f"{code(clip(scope, 200))} until the end of {escape(month)}."
        )
    look = f" {_mentions(owners)} please look into it" if owners else " Please look into it"
    about = f", starting with {driver}" if driver else ""
    return f":mag: Not expected, said {who}: this anomaly stays open.{look}{about}."


def _driving_run_line(anomaly: Anomaly, money: Callable[[Decimal], str]) -> str:
    """Return the line naming the run that drove the anomaly, or "" when none did.

    A spend anomaly whose drivers already list that run says nothing more.
    """
    if anomaly.run is None:
        return ""
    if any(d.dimension == "run" and d.value == anomaly.run.run for d in anomaly.drivers):
        return ""
    run = anomaly.run
    rise = f"+{run.increase:,.1f} GPU-hours" if anomaly.kind == "gpu" else f"+{money(run.increase)}"
    fresh = " (new: not in the baseline)" if run.increase == run.value else ""
    return f"Driven by run {code(clip(run.run, 120))}: {rise} over its usual{fresh}."


def build_unallocated_alert(
    lines: list[tuple[str, str | None, Decimal]], total: Decimal, week_label: str, currency: str
) -> tuple[str, Blocks]:
    """Render the weekly unallocated alert from (service, tag value, cost) lines, largest first."""
    amount = format_money(total, currency)
    headline = f"{amount} of spend had no owner in {week_label}"
    items = []
    for service, tag, cost in lines[:10]:
        hint = f" (tagged {code(clip(tag, 60))}, not a registered model)" if tag else " (untagged)"
        items.append(f"• {escape(clip(service, 80))}{hint}: *{format_money(cost, currency)}*")
    if len(lines) > 10:
        items.append(f"…and {len(lines) - 10} more")
    blocks: Blocks = [
        _header(headline),
        _section("\n".join(items) or "Nothing unallocated."),
        _context(
            "Register the model or fix the tag so this spend has an owner · `/mlcost unallocated`"
        ),
    ]
    return f":mag: {headline}", blocks


def replace_actions(blocks: Blocks, note: str) -> Blocks:
    """Return the alert's blocks with its buttons replaced by a note saying who did what."""
    kept = [b for b in blocks if b.get("block_id") not in (ACTIONS_BLOCK, ANOMALY_ACTIONS_BLOCK)]
    return [*kept, _context(note)]


def acknowledged_note(user_id: str, when: dt.datetime, scope: str, period: str) -> str:
    """Say who acknowledged a budget alert (mrkdwn, for replace_actions)."""
    return (
        f":white_check_mark: Acknowledged by {users([user_id])} on {format_when(when)}: "
        f"no more alerts for {code(scope)} in {escape(period_words(period))} unless it is "
        "exceeded."
    )


def snoozed_note(user_id: str, until: dt.datetime) -> str:
    """Say who snoozed a budget alert and until when (mrkdwn, for replace_actions)."""
    return f":zzz: Snoozed by {users([user_id])} until {format_when(until)}."


def raised_note(
    user_id: str, scope: str, amount: str, when: dt.datetime, period: str = MONTHLY
) -> str:
    """Say who raised a budget, in the alert's thread (mrkdwn); `period` is its kind."""
    return (
        f":moneybag: {users([user_id])} set the {period} budget of {code(scope)} to "
        f"{escape(amount)}{per_suffix(period)} on {format_when(when)}."
    )


def build_raise_modal(
    scope: str,
    period: str,
    current: Decimal,
    currency: str,
    alert_key: str,
    kind: str | None = None,
) -> dict[str, Any]:
    """Return the Raise budget modal view (`period` is the alert's period label, `kind` the
    budget's period now: weekly, ...; by default the alert's). Its metadata is the alert's
    outbox key only: the submission reads the scope and the thread from the outbox."""
    kind = kind or period_kind_of_label(period)
    return {
        "type": "modal",
        "callback_id": RAISE_CALLBACK,
        "private_metadata": json.dumps({"alert": alert_key}, ensure_ascii=False),
        "title": {"type": "plain_text", "text": "Raise budget"},
        "submit": {"type": "plain_text", "text": "Save"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            _section(
                f"{kind.capitalize()} budget of {code(clip(scope, 200))}: currently "
                f"*{format_money(current, currency)}{per_suffix(kind)}*."
            ),
            {
                "type": "input",
                "block_id": AMOUNT_BLOCK,
                "label": {"type": "plain_text", "text": f"New {kind} budget"},
                "element": {
                    "type": "plain_text_input",
                    "action_id": AMOUNT_BLOCK,
                    "initial_value": f"{current.normalize():f}",
                },
            },
        ],
    }


def format_when(when: dt.datetime) -> str:
    """Render a time for a note in an alert."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
