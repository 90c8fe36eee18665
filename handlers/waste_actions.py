"""Resource finding buttons: Stop it, Keep for 7 days, Not waste (owners and admins only)."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient
from sqlalchemy.orm import Session

from bot.db.schema import ResourceFindingRecord
from bot.slack.blocks.waste_resource import KEEP_ACTION, NOT_WASTE_ACTION, STOP_ACTION
from bot.slack.clicks import click_origin
from bot.slack.error_boundary import guarded
from bot.slack.middleware import services_of, unit_of_work_of
from bot.slack.notifier import SLACK_FAILURES
from bot.slack.render import render
from bot.waste.lifecycle import (
    KEEP,
    NOT_WASTE,
    StopApproval,
    approve_stop,
    load_finding,
    message_of,
    owners_of,
    record_silence,
)
from bot.waste.stopping import update_post

log = logging.getLogger(__name__)

Rendered = tuple[str, list[dict[str, Any]]]


def _rendered(session: Session, row: ResourceFindingRecord) -> Rendered:
    return render(message_of(row, owners_of(session, row)))


def _tell(client: WebClient, channel: str, user: str, text: str) -> None:
    try:
        client.chat_postEphemeral(channel=channel, user=user, text=text)
    except SLACK_FAILURES as exc:
        log.warning("could not tell %s: %s", user, exc)


def silence_resource(
    ack: Ack, body: dict[str, Any], action: dict[str, Any], context: BoltContext
) -> None:
    """Keep for 7 days / Not waste: record it (owners and admins only), show it on the post."""
    ack()
    services = services_of(context)
    channel, ts, user = click_origin(body)
    decision = KEEP if action["action_id"] == KEEP_ACTION else NOT_WASTE
    now = services.clock()

    def step(session: Session) -> Rendered:
        row = record_silence(
            session=session,
            finding_id=int(action["value"]),
            user_id=user,
            decision=decision,
            now=now,
        )
        return _rendered(session, row)

    update_post(services.notifier, (channel, ts), unit_of_work_of(context)(step))


def stop_resource(
    ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient, context: BoltContext
) -> None:
    """Stop it: record the approval and claim the action, show it, and act in the background."""
    ack()
    services = services_of(context)
    channel, ts, user = click_origin(body)

    def claim(session: Session) -> tuple[StopApproval, Rendered | None]:
        approval = approve_stop(
            session=session, finding_id=int(action["value"]), user_id=user, now=services.clock()
        )
        if not approval.acts:
            return approval, None
        return approval, _rendered(session, load_finding(session, approval.finding_id))

    approval, rendered = unit_of_work_of(context)(claim)
    if rendered is None:
        _tell(
            client,
            channel,
            user,
            "Stop it was already approved for this resource "
            f"({approval.previous_result or 'in progress'})"
            f"{f' by <@{approval.user_id}>' if approval.user_id else ''}; nothing more was done.",
        )
        return
    # "acting now" first: the background's update with the result must come after it
    update_post(services.notifier, (channel, ts), rendered)
    if not services.stop_in_background(approval, (channel, ts)):
        log.warning(
            "Stop it for resource finding %s approved while stopping: it runs after the lease",
            approval.finding_id,
        )


def register(app: App) -> None:
    """Wire the resource finding buttons."""
    app.action(STOP_ACTION)(guarded(stop_resource))
    app.action(KEEP_ACTION)(guarded(silence_resource))
    app.action(NOT_WASTE_ACTION)(guarded(silence_resource))
