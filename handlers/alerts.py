"""Budget alert buttons: Acknowledge, Snooze 7 days, and Raise budget (a modal)."""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient
from sqlalchemy.orm import Session

from bot.budgets.admin import parse_amount, set_budget
from bot.budgets.silences import acknowledge_budget, budget_for_raise, snooze_budget
from bot.money import format_money
from bot.slack.blocks.alerts import (
    ACK_ACTION,
    AMOUNT_BLOCK,
    RAISE_ACTION,
    RAISE_CALLBACK,
    SNOOZE_ACTION,
    acknowledged_note,
    build_raise_modal,
    raised_note,
    replace_actions,
    snoozed_note,
)
from bot.slack.clicks import click_origin
from bot.slack.error_boundary import guarded
from bot.slack.middleware import services_of, unit_of_work_of
from bot.slack.notifier import SLACK_FAILURES

log = logging.getLogger(__name__)


def _target(body: dict[str, Any]) -> tuple[str, str]:
    """Return (budget scope, period) from the clicked button's value."""
    action = (body.get("actions") or [{}])[0]
    value = json.loads(action.get("value") or "{}")
    return str(value.get("scope", "")), str(value.get("period", ""))


def _tell_quietly(client: WebClient, channel: str, user: str, text: str) -> None:
    """Tell the user if Slack lets us; a note that cannot be shown is only logged."""
    try:
        client.chat_postEphemeral(channel=channel, user=user, text=text)
    except SLACK_FAILURES as exc:
        log.warning("could not tell %s: %s", user, exc)


def _record_silence(
    session: Session, action_id: str, user: str, scope: str, period: str, now: dt.datetime
) -> str:
    """Record an acknowledgement or a snooze; return the note that replaces the buttons."""
    if action_id == ACK_ACTION:
        acknowledge_budget(session=session, user_id=user, scope=scope, period=period, now=now)
        return acknowledged_note(user, now, scope, period)
    snoozed = snooze_budget(session=session, user_id=user, scope=scope, period=period, now=now)
    return snoozed_note(user, snoozed.until or now)


def silence_alert(ack: Ack, body: dict[str, Any], client: WebClient, context: BoltContext) -> None:
    """Acknowledge or snooze a budget alert, then replace its buttons with a note."""
    ack()
    channel, ts, user = click_origin(body)
    scope, period = _target(body)
    action_id = (body.get("actions") or [{}])[0].get("action_id", "")
    now = services_of(context).clock()
    note = unit_of_work_of(context)(
        lambda session: _record_silence(session, action_id, user, scope, period, now)
    )
    message = body.get("message") or {}
    blocks = replace_actions(message.get("blocks") or [], note)
    try:
        client.chat_update(channel=channel, ts=ts, text=message.get("text") or note, blocks=blocks)
    except SLACK_FAILURES as exc:  # recorded already: tell the clicker, keep the alert
        log.warning("alert %s %s recorded, message not updated: %s", scope, action_id, exc)
        _tell_quietly(client, channel, user, f"{note} (The alert itself could not be updated.)")


def open_raise_modal(
    ack: Ack, body: dict[str, Any], client: WebClient, context: BoltContext
) -> None:
    """Open the Raise budget modal for the scope's owners (others are refused)."""
    ack()
    channel, ts, user = click_origin(body)
    scope, period = _target(body)
    current, currency, kind = unit_of_work_of(context)(
        lambda session: budget_for_raise(session=session, user_id=user, scope=scope)
    )
    where = {"channel": channel, "ts": ts}
    view = build_raise_modal(scope, period, current, currency, where, kind=kind)
    client.views_open(trigger_id=body["trigger_id"], view=view)


def submit_raise(
    ack: Ack, body: dict[str, Any], view: dict[str, Any], client: WebClient, context: BoltContext
) -> None:
    """Change the budget (a refusal shows under the amount), then note it in the alert thread."""
    user = (body.get("user") or {}).get("id", "")
    meta = json.loads(view.get("private_metadata") or "{}")
    amount = parse_amount(view["state"]["values"][AMOUNT_BLOCK][AMOUNT_BLOCK].get("value") or "")
    budget = unit_of_work_of(context)(
        lambda session: set_budget(
            session=session, user_id=user, scope=meta["scope"], amount=amount
        )
    )
    ack()
    if not meta.get("channel"):
        return
    new = format_money(budget.monthly_amount, budget.currency)
    text = raised_note(user, str(meta["scope"]), new, services_of(context).clock(), budget.period)
    try:
        client.chat_postMessage(
            channel=meta["channel"], thread_ts=meta.get("ts") or None, text=text
        )
    except SLACK_FAILURES as exc:  # the budget is changed and audited; a courtesy
        log.warning("budget %s raised, thread note not posted: %s", meta["scope"], exc)
        _tell_quietly(client, meta["channel"], user, text)


def register(app: App) -> None:
    """Wire the budget alert buttons and the Raise budget modal."""
    app.action(ACK_ACTION)(guarded(silence_alert))
    app.action(SNOOZE_ACTION)(guarded(silence_alert))
    app.action(RAISE_ACTION)(guarded(open_raise_modal))
    app.view(RAISE_CALLBACK)(guarded(submit_raise))
