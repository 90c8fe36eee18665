"""Anomaly buttons: Expected and Not expected (owners and admins only), answered once."""

from __future__ import annotations

import json
import logging
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient
from sqlalchemy.orm import Session

from bot.anomalies.answers import answer_anomaly, parse_posted_figure
from bot.anomalies.detect import EXPECTED, NOT_EXPECTED
from bot.notify.posts import find_post, posted_button_value
from bot.slack.blocks.alerts import (
    EXPECTED_ACTION,
    NOT_EXPECTED_ACTION,
    answered_note_for,
    replace_actions,
)
from bot.slack.clicks import click_origin
from bot.slack.error_boundary import guarded
from bot.slack.middleware import services_of, unit_of_work_of
from bot.slack.mrkdwn import users
from bot.slack.notifier import SLACK_FAILURES, Posted

log = logging.getLogger(__name__)


def _tell(client: WebClient, channel: str, user: str, text: str) -> None:
    try:
        client.chat_postEphemeral(channel=channel, user=user, text=text)
    except SLACK_FAILURES as exc:
        log.warning("could not tell %s: %s", user, exc)


def answer_clicked(
    ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient, context: BoltContext
) -> None:
    """Record the answer (once), then replace the post's buttons with who answered what."""
    ack()
    services = services_of(context)
    settings = services.settings.alerts
    channel, ts, user = click_origin(body)
    answer = EXPECTED if action.get("action_id") == EXPECTED_ACTION else NOT_EXPECTED
    try:
        value = json.loads(action.get("value") or "{}")
    except json.JSONDecodeError:
        value = {}  # the key is then missing: the service says the button names no anomaly
    key = str(value.get("key", ""))
    now = services.clock()

    def step(session: Session) -> tuple[str, bool, str, Posted, dict[str, Any]]:
        # the click names the post; its figures are the ones mlcost recorded when it posted
        post = find_post(session, key=key or None, channel=channel, ts=ts)
        figures = posted_button_value(post, str(action.get("action_id") or EXPECTED_ACTION))
        result = answer_anomaly(
            session=session,
            key=post.dedupe_key,
            answer=answer,
            user_id=user,
            amount=parse_posted_figure(figures.get("amount")),
            excess=parse_posted_figure(figures.get("excess")),
            now=now,
            basis=settings.budget_cost_basis,
            currency=settings.currency,
        )
        row = result.row
        note = answered_note_for(row, result.owners)
        shown = post.payload or {}
        where = Posted(post.slack_channel or channel, post.slack_ts or ts)
        return note, result.recorded, row.user_id, where, shown

    note, recorded, answered_by, where, shown = unit_of_work_of(context)(step)
    channel, ts = where.channel, where.ts  # where mlcost posted it, not where the click says
    if not recorded:
        _tell(
            client,
            channel,
            user,
            f"This anomaly was already answered by {users([answered_by])}; nothing was changed.",
        )
    blocks = replace_actions(list(shown.get("blocks") or []), note)  # the post as recorded
    try:
        client.chat_update(channel=channel, ts=ts, text=shown.get("text") or note, blocks=blocks)
    except SLACK_FAILURES as exc:  # recorded already: tell the clicker, keep the answer
        log.warning("anomaly %s answered, message not updated: %s", key, exc)
        if recorded:
            _tell(client, channel, user, f"{note} (The post itself could not be updated.)")


def register(app: App) -> None:
    """Wire the anomaly answer buttons."""
    app.action(EXPECTED_ACTION)(guarded(answer_clicked))
    app.action(NOT_EXPECTED_ACTION)(guarded(answer_clicked))
