"""Budget alert buttons: Acknowledge, Snooze 7 days, and Raise budget (a modal)."""

from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient
from sqlalchemy.orm import Session

from bot.budgets.admin import parse_amount, set_budget
from bot.budgets.plan import parse_budget_alert_key
from bot.budgets.silences import acknowledge_budget, budget_for_raise, snooze_budget
from bot.db.schema import Budget
from bot.errors import NotFoundError
from bot.money import format_money
from bot.notify.posts import NOT_OURS, find_post
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


@dataclass(frozen=True)
class AlertPost:
    """A budget alert as mlcost posted it: its outbox key, scope and period, and where it is."""

    key: str
    scope: str
    period: str
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]


def _alert_post(session: Session, key: str | None, channel: str = "", ts: str = "") -> AlertPost:
    """Return the budget alert a click or a modal names, read from the outbox (not the payload)."""
    post = find_post(session, key=key, channel=channel, ts=ts)
    parsed = parse_budget_alert_key(post.dedupe_key)
    if parsed is None:
        raise NotFoundError(NOT_OURS)
    scope, period, _kind, _threshold = parsed
    posted = post.payload or {}
    return AlertPost(
        post.dedupe_key,
        scope,
        period,
        post.slack_channel or "",
        post.slack_ts or "",
        str(posted.get("text") or ""),
        list(posted.get("blocks") or []),
    )


def _clicked_key(body: dict[str, Any]) -> str | None:
    """Return the outbox key the clicked button carries (None on posts made before it did)."""
    action = (body.get("actions") or [{}])[0]
    try:
        value = json.loads(action.get("value") or "{}")
    except json.JSONDecodeError:
        return None
    key = value.get("key") if isinstance(value, dict) else None
    return str(key) if key else None


def _tell_quietly(client: WebClient, channel: str, user: str, text: str) -> None:
    """Tell the user if Slack lets us; a note that cannot be shown is only logged."""
    try:
        client.chat_postEphemeral(channel=channel, user=user, text=text)
    except SLACK_FAILURES as exc:
        log.warning("could not tell %s: %s", user, exc)


def _record_silence(
    session: Session,
    action_id: str,
    user: str,
    clicked: tuple[str | None, str, str],
    now: dt.datetime,
) -> tuple[AlertPost, str]:
    """Record an acknowledgement or a snooze; return the alert and the note for its buttons."""
    alert = _alert_post(session, *clicked)
    scope, period = alert.scope, alert.period
    if action_id == ACK_ACTION:
        acknowledge_budget(session=session, user_id=user, scope=scope, period=period, now=now)
        return alert, acknowledged_note(user, now, scope, period)
    snoozed = snooze_budget(session=session, user_id=user, scope=scope, period=period, now=now)
    return alert, snoozed_note(user, snoozed.until or now)


def silence_alert(ack: Ack, body: dict[str, Any], client: WebClient, context: BoltContext) -> None:
    """Acknowledge or snooze a budget alert, then replace its buttons with a note."""
    ack()
    channel, ts, user = click_origin(body)
    clicked = (_clicked_key(body), channel, ts)
    action_id = (body.get("actions") or [{}])[0].get("action_id", "")
    now = services_of(context).clock()
    alert, note = unit_of_work_of(context)(
        lambda session: _record_silence(session, action_id, user, clicked, now)
    )
    channel, ts, scope = alert.channel, alert.ts, alert.scope
    blocks = replace_actions(alert.blocks, note)  # the alert as posted, not as the click shows it
    try:
        client.chat_update(channel=channel, ts=ts, text=alert.text or note, blocks=blocks)
    except SLACK_FAILURES as exc:  # recorded already: tell the clicker, keep the alert
        log.warning("alert %s %s recorded, message not updated: %s", scope, action_id, exc)
        _tell_quietly(client, channel, user, f"{note} (The alert itself could not be updated.)")


def open_raise_modal(
    ack: Ack, body: dict[str, Any], client: WebClient, context: BoltContext
) -> None:
    """Open the Raise budget modal for the scope's owners (others are refused)."""
    ack()
    channel, ts, user = click_origin(body)
    clicked = (_clicked_key(body), channel, ts)

    def step(session: Session) -> tuple[AlertPost, tuple[Decimal, str, str]]:
        alert = _alert_post(session, *clicked)
        return alert, budget_for_raise(session=session, user_id=user, scope=alert.scope)

    alert, (current, currency, kind) = unit_of_work_of(context)(step)
    view = build_raise_modal(alert.scope, alert.period, current, currency, alert.key, kind=kind)
    client.views_open(trigger_id=body["trigger_id"], view=view)


def submit_raise(
    ack: Ack, body: dict[str, Any], view: dict[str, Any], client: WebClient, context: BoltContext
) -> None:
    """Change the budget (a refusal shows under the amount), then note it in the alert thread."""
    user = (body.get("user") or {}).get("id", "")
    try:
        meta = json.loads(view.get("private_metadata") or "{}")
    except json.JSONDecodeError:
        meta = {}
    key = str(meta.get("alert") or "") if isinstance(meta, dict) else ""
    amount = parse_amount(view["state"]["values"][AMOUNT_BLOCK][AMOUNT_BLOCK].get("value") or "")

    def step(session: Session) -> tuple[AlertPost, Budget]:
        alert = _alert_post(session, key or None)  # the scope and the thread: the outbox's
        return alert, set_budget(session=session, user_id=user, scope=alert.scope, amount=amount)

    alert, budget = unit_of_work_of(context)(step)
    ack()
    if not alert.channel:
        return
    new = format_money(budget.monthly_amount, budget.currency)
    text = raised_note(user, alert.scope, new, services_of(context).clock(), budget.period)
    try:
        client.chat_postMessage(channel=alert.channel, thread_ts=alert.ts or None, text=text)
    except SLACK_FAILURES as exc:  # the budget is changed and audited; a courtesy
        log.warning("budget %s raised, thread note not posted: %s", alert.scope, exc)
        _tell_quietly(client, alert.channel, user, text)


def register(app: App) -> None:
    """Wire the budget alert buttons and the Raise budget modal."""
    app.action(ACK_ACTION)(guarded(silence_alert))
    app.action(SNOOZE_ACTION)(guarded(silence_alert))
    app.action(RAISE_ACTION)(guarded(open_raise_modal))
    app.view(RAISE_CALLBACK)(guarded(submit_raise))
