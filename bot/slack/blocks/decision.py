"""The modal that confirms a review decision and takes an optional reason (pure)."""

from __future__ import annotations

import json
from typing import Any

from bot.review.messages import DECISIONS
from bot.slack.guard import MAX_MODAL_TITLE, clip
from bot.slack.mrkdwn import bold, escape

DECISION_VIEW = "review_decision"
REASON_BLOCK = "reason"


def build_decision_view(
    item_id: int, model: str, month: str, decision: str, channel: str | None
) -> dict[str, Any]:
    """Build the modal that confirms a decision and takes an optional reason."""
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
