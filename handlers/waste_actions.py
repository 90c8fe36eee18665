"""Resource finding buttons: Stop it, Keep for 7 days, Not waste (owners and admins only)."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient
from sqlalchemy.orm import Session

from bot.bootstrap import AppServices
from bot.db.schema import ResourceFindingRecord
from bot.notify.delivery import deliver_pending
from bot.slack.blocks.waste_resource import KEEP_ACTION, NOT_WASTE_ACTION, STOP_ACTION
from bot.slack.error_boundary import guarded
from bot.slack.middleware import services_of, unit_of_work_of
from bot.slack.notifier import SLACK_FAILURES
from bot.slack.render import render
from bot.waste.actions import ActionResult, Outcome, perform_stop
from bot.waste.lifecycle import (
    KEEP,
    NOT_WASTE,
    REPLY_KIND,
    StopApproval,
    approve_stop,
    message_of,
    owners_of,
    record_action_result,
    record_silence,
)

log = logging.getLogger(__name__)

Rendered = tuple[str, list[dict[str, Any]]]


def _where(body: dict[str, Any]) -> tuple[str, str, str]:
    """Return (channel, message ts, user) of a button click."""
    container = body.get("container") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id", "")
    ts = container.get("message_ts") or (body.get("message") or {}).get("ts", "")
    return channel, ts, (body.get("user") or {}).get("id", "")


def _rendered(session: Session, row: ResourceFindingRecord) -> Rendered:
    return render(message_of(row, owners_of(session, row)))


def _update_post(services: AppServices, channel: str, ts: str, rendered: Rendered) -> None:
    """Show the decision on the post; the decision is kept even if Slack refuses the update."""
    if not (channel and ts):
        return
    try:
        services.notifier.update(channel, ts, rendered[0], rendered[1])
    except SLACK_FAILURES as exc:
        log.warning("resource finding post %s/%s not updated: %s", channel, ts, exc)


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
    channel, ts, user = _where(body)
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

    _update_post(services, channel, ts, unit_of_work_of(context)(step))


def stop_resource(
    ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient, context: BoltContext
) -> None:
    """Stop it: record the approval, act once if enabled and unprotected, report in the thread."""
    ack()
    services = services_of(context)
    channel, ts, user = _where(body)
    unit_of_work = unit_of_work_of(context)
    approval = unit_of_work(
        lambda session: approve_stop(
            session=session, finding_id=int(action["value"]), user_id=user, now=services.clock()
        )
    )
    if not approval.acts:
        _tell(
            client,
            channel,
            user,
            "Stop it was already approved for this resource "
            f"({approval.previous_result or 'in progress'}); nothing more was done.",
        )
        return
    result = _perform(services, approval)

    def record(session: Session) -> Rendered:
        row = record_action_result(
            session=session, approval=approval, user_id=user, result=result, now=services.clock()
        )
        return _rendered(session, row)

    rendered = unit_of_work(record)
    deliver_pending(
        session_factory=services.session_factory,
        notifier=services.notifier,
        clock=services.clock,
        find_posted=services.find_posted,
        kinds=(REPLY_KIND,),
    )
    _update_post(services, channel, ts, rendered)


def _perform(services: AppServices, approval: StopApproval) -> ActionResult:
    """Run the action; an unexpected error is a failed result (the claim must be released)."""
    try:
        return perform_stop(
            services.aws,
            action=approval.action,
            region=approval.region,
            target=approval.target,
            enabled=services.settings.actions_enabled,
        )
    except Exception as exc:
        log.exception("Stop it for resource finding %s failed", approval.finding_id)
        return ActionResult(
            Outcome.FAILED, f"failed: {type(exc).__name__}", error_code=type(exc).__name__
        )


def register(app: App) -> None:
    """Wire the resource finding buttons."""
    app.action(STOP_ACTION)(guarded(stop_resource))
    app.action(KEEP_ACTION)(guarded(silence_resource))
    app.action(NOT_WASTE_ACTION)(guarded(silence_resource))
