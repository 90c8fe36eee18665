"""Review buttons (Keep / Kill / Right-size / Needs discussion), the reason modal, Sign-off."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient
from sqlalchemy.orm import Session

from bot.review.decisions import check_can_decide, record_decision
from bot.review.refresh import REFRESH_FAILURES, refresh_messages
from bot.review.signoff import record_signoff
from bot.slack.blocks.decision import DECISION_VIEW, REASON_BLOCK, build_decision_view
from bot.slack.blocks.review import DECIDE_ACTION_PREFIX
from bot.slack.blocks.signoff import SIGNOFF_ACTION, mark_signed_off
from bot.slack.error_boundary import guarded
from bot.slack.middleware import services_of, unit_of_work_of

log = logging.getLogger(__name__)

DECIDE_ACTIONS = re.compile(f"^{DECIDE_ACTION_PREFIX}(keep|kill|rightsize|discuss)$")


def open_decision(
    ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient, context: BoltContext
) -> None:
    """A decision button: refuse non-owners at once, else ask for an optional reason."""
    ack()
    decision = action["action_id"].removeprefix(DECIDE_ACTION_PREFIX)
    item_id, model, month = unit_of_work_of(context)(
        lambda session: _decidable_item(session, int(action["value"]), body["user"]["id"])
    )
    channel = (body.get("channel") or {}).get("id")
    view = build_decision_view(item_id, model, month, decision, channel)
    client.views_open(trigger_id=body["trigger_id"], view=view)


def _decidable_item(session: Session, item_id: int, user_id: str) -> tuple[int, str, str]:
    """Return (item id, model, month) of an item the user may decide."""
    item = check_can_decide(session=session, item_id=item_id, user_id=user_id)
    return item.id, item.model_name, item.review.month


def submit_decision(
    ack: Ack, body: dict[str, Any], view: dict[str, Any], context: BoltContext
) -> None:
    """Record the decision (permission checked again), then update the thread in place."""
    services = services_of(context)
    meta = json.loads(view.get("private_metadata") or "{}")
    values = (view.get("state") or {}).get("values") or {}
    reason = ((values.get(REASON_BLOCK) or {}).get(REASON_BLOCK) or {}).get("value")
    unit_of_work_of(context)(
        lambda session: record_decision(
            session=session,
            item_id=int(meta["item"]),
            user_id=body["user"]["id"],
            decision=meta["decision"],
            reason=reason,
            now=services.clock(),
        )
    )
    ack()
    try:
        refresh_messages(
            session_factory=services.session_factory,
            notifier=services.notifier,
            renderer=services.renderer,
            item_id=int(meta["item"]),
            currency=services.settings.currency,
        )
    except REFRESH_FAILURES as exc:  # the decision is kept; the refresh job retries
        log.warning(
            "review item %s: decision recorded, thread not updated yet: %s", meta["item"], exc
        )


def sign_off(ack: Ack, body: dict[str, Any], action: dict[str, Any], context: BoltContext) -> None:
    """Record an owner's weekly sign-off and show it in the digest."""
    ack()
    services = services_of(context)
    value = json.loads(action["value"])
    signed_by, signed_at = unit_of_work_of(context)(
        lambda session: _record_signoff(session, value, body["user"]["id"], services.clock())
    )
    message = body.get("message") or {}
    channel = (body.get("channel") or {}).get("id") or body["container"]["channel_id"]
    blocks = mark_signed_off(message.get("blocks") or [], value["model"], signed_by, signed_at)
    services.notifier.update(
        channel,
        body["container"]["message_ts"],
        message.get("text") or "Weekly sign-off",
        blocks,
    )


def _record_signoff(
    session: Session, value: dict[str, str], user_id: str, now: dt.datetime
) -> tuple[str, dt.datetime]:
    """Record the sign-off; return who signed and when."""
    signoff = record_signoff(
        session=session,
        model_name=value["model"],
        week_start=dt.date.fromisoformat(value["week"]),
        user_id=user_id,
        now=now,
    )
    return signoff.user_id, signoff.signed_at


def register(app: App) -> None:
    """Wire the review decision buttons, the reason modal and the sign-off button."""
    app.action(DECIDE_ACTIONS)(guarded(open_decision))
    app.view(DECISION_VIEW)(guarded(submit_decision))
    app.action(SIGNOFF_ACTION)(guarded(sign_off))
