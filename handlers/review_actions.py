"""Review buttons (Keep / Kill / Right-size / Needs discussion), the reason modal, Sign-off."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import uuid
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from bot.bootstrap import AppServices
from bot.db.engine import session_scope
from bot.errors import MlcostError
from bot.review.decisions import check_can_decide, record_decision
from bot.review.refresh import REFRESH_FAILURES, refresh_messages
from bot.review.signoff import record_signoff
from bot.slack.blocks.review import DECIDE_ACTION_PREFIX, DECISIONS
from bot.slack.blocks.signoff import SIGNOFF_ACTION, mark_signed_off
from bot.slack.guard import MAX_MODAL_TITLE, clip
from bot.slack.mrkdwn import bold, escape, escape_message
from bot.slack.notifier import SlackNotifier

log = logging.getLogger(__name__)

DECISION_VIEW = "review_decision"
REASON_BLOCK = "reason"


def build_decision_view(
    item_id: int, model: str, month: str, decision: str, channel: str | None
) -> dict[str, Any]:
    """The modal that confirms a decision and takes an optional reason."""
    label = DECISIONS[decision]
    return {
        "type": "modal",
        "callback_id": DECISION_VIEW,
        "private_metadata": json.dumps({"item": item_id, "decision": decision, "channel": channel}),
        "title": {"type": "plain_text", "text": "Review decision"},
        "submit": {"type": "plain_text", "text": clip(label, MAX_MODAL_TITLE)},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": f"Record *{label}* for {bold(clip(model, 100))} in the "
                    f"{escape(month)} review? Everyone in the thread will see it.",
                },
            },
            {
                "type": "input",
                "block_id": REASON_BLOCK,
                "optional": True,
                "label": {"type": "plain_text", "text": "Reason (optional)"},
                "element": {
                    "type": "plain_text_input",
                    "action_id": REASON_BLOCK,
                    "multiline": True,
                    "max_length": 2000,
                },
            },
        ],
    }


def _fail(respond: Respond, exc: Exception) -> None:
    if isinstance(exc, MlcostError):
        respond(
            response_type="ephemeral",
            replace_original=False,
            text=f":warning: {escape_message(exc)}",
        )
        return
    ref = uuid.uuid4().hex[:8]
    log.error("review action failed (ref %s)", ref, exc_info=exc)
    respond(
        response_type="ephemeral",
        replace_original=False,
        text=f":x: Sorry, something went wrong on our side (ref `{ref}`).",
    )


def register(app: App, services: AppServices) -> None:
    @app.action(re.compile(f"^{DECIDE_ACTION_PREFIX}(keep|kill|rightsize|discuss)$"))
    def open_decision(
        ack: Ack, body: dict[str, Any], action: dict[str, Any], respond: Respond, client: WebClient
    ) -> None:
        """A decision button: refuse non-owners at once, else ask for an optional reason."""
        ack()
        try:
            decision = action["action_id"].removeprefix(DECIDE_ACTION_PREFIX)
            with session_scope(services.session_factory) as session:
                item = check_can_decide(
                    session=session, item_id=int(action["value"]), user_id=body["user"]["id"]
                )
                view = build_decision_view(
                    item.id,
                    item.model_name,
                    item.review.month,
                    decision,
                    (body.get("channel") or {}).get("id"),
                )
            client.views_open(trigger_id=body["trigger_id"], view=view)
        except Exception as exc:
            _fail(respond, exc)

    @app.view(DECISION_VIEW)
    def submit_decision(
        ack: Ack, body: dict[str, Any], view: dict[str, Any], client: WebClient
    ) -> None:
        """Record the decision (permission checked again), then update the thread in place."""
        meta = json.loads(view.get("private_metadata") or "{}")
        values = (view.get("state") or {}).get("values") or {}
        reason = ((values.get(REASON_BLOCK) or {}).get(REASON_BLOCK) or {}).get("value")
        user = body["user"]["id"]
        try:
            with session_scope(services.session_factory) as session:
                record_decision(
                    session=session,
                    item_id=int(meta["item"]),
                    user_id=user,
                    decision=meta["decision"],
                    reason=reason,
                    now=services.clock(),
                )
        except MlcostError as exc:
            ack(response_action="errors", errors={REASON_BLOCK: clip(str(exc), 150)})
            return
        ack()
        try:
            refresh_messages(
                session_factory=services.session_factory,
                notifier=SlackNotifier(client),
                item_id=int(meta["item"]),
                currency=services.settings.currency,
            )
        except REFRESH_FAILURES as exc:  # the decision is kept; the refresh job retries
            log.warning(
                "review item %s: decision recorded, thread not updated yet: %s", meta["item"], exc
            )

    @app.action(SIGNOFF_ACTION)
    def sign_off(
        ack: Ack, body: dict[str, Any], action: dict[str, Any], respond: Respond, client: WebClient
    ) -> None:
        """Record an owner's weekly sign-off and show it in the digest."""
        ack()
        try:
            value = json.loads(action["value"])
            user = body["user"]["id"]
            now = services.clock()
            with session_scope(services.session_factory) as session:
                signoff = record_signoff(
                    session=session,
                    model_name=value["model"],
                    week_start=dt.date.fromisoformat(value["week"]),
                    user_id=user,
                    now=now,
                )
                signed_by, signed_at = signoff.user_id, signoff.signed_at
            message = body.get("message") or {}
            channel = (body.get("channel") or {}).get("id") or body["container"]["channel_id"]
            blocks = mark_signed_off(
                message.get("blocks") or [], value["model"], signed_by, signed_at
            )
            SlackNotifier(client).update(
                channel,
                body["container"]["message_ts"],
                message.get("text") or "Weekly sign-off",
                blocks,
            )
        except Exception as exc:
            _fail(respond, exc)
