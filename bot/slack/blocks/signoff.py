"""Blocks for the weekly sign-off digest and its Sign-off buttons."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from bot.counts import counted
from bot.periods import days_words
from bot.slack.blocks.common import stale_data_block
from bot.slack.blocks.economics import (
    economics_lines,
    model_name,
)
from bot.slack.guard import (
    MAX_SECTION_TEXT,
    clip,
)
from bot.slack.mrkdwn import clip as clip_mrkdwn
from bot.slack.mrkdwn import user

SIGNOFF_ACTION = "signoff"


MAX_DIGEST_MODELS = 40


def signoff_value(model: str, week_start: dt.date) -> str:
    """Encode a sign-off button's value."""
    return json.dumps({"model": model, "week": week_start.isoformat()})


def build_signoff_digest(
    user_id: str,
    week_start: dt.date,
    snaps: Sequence[dict[str, Any]],
    currency: str,
    *,
    stale: str | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """An owner's weekly digest: each model's week, with a Sign-off button per model.

    `stale` says the ledger did not reach the week's end (freshness_line).
    """
    week_end = week_start + dt.timedelta(days=6)
    title = f"Your models' week · {days_words(week_start, week_end, year=True)}"
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(title, 150)}},
        {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": f"{user(user_id)}, please look over the spend of the models you "
                    "own and sign each off. Unsigned models show up in the monthly review.",
                }
            ],
        },
    ]
    if stale is not None:
        blocks.append(stale_data_block(stale))
    for snap in snaps[:MAX_DIGEST_MODELS]:
        lines = economics_lines(snap, currency)
        body = f"*{model_name(snap['model'])}* · {lines['Cost']}\n{lines['Value']}"
        metric_key = next((k for k in lines if k.startswith("Cost per 1k")), None)
        if metric_key:
            body += f" · {metric_key.lower()}: {lines[metric_key].split(chr(10))[0]}"
        blocks.append(
            {
                "type": "section",
                "block_id": f"signoff_{snap['model']}"[:255],
                "text": {"type": "mrkdwn", "text": clip_mrkdwn(body, MAX_SECTION_TEXT)},
                "accessory": {
                    "type": "button",
                    "action_id": SIGNOFF_ACTION,
                    "text": {"type": "plain_text", "text": "Sign off"},
                    "style": "primary",
                    "value": signoff_value(snap["model"], week_start),
                },
            }
        )
    if len(snaps) > MAX_DIGEST_MODELS:
        more = len(snaps) - MAX_DIGEST_MODELS
        blocks.append(
            {"type": "context", "elements": [{"type": "mrkdwn", "text": f"…and {more} more"}]}
        )
    text = f"{title}: {counted(len(snaps), 'model')} to sign off"
    return text, blocks


def mark_signed_off(
    blocks: list[dict[str, Any]], model: str, user_id: str, when: dt.datetime
) -> list[dict[str, Any]]:
    """Return the digest's blocks with the model's button replaced by who signed it off."""
    result = []
    for block in blocks:
        if block.get("block_id") == f"signoff_{model}"[:255]:
            block = {k: v for k, v in block.items() if k != "accessory"}
            text = dict(block["text"])
            note = (
                f"\n:white_check_mark: signed off by {user(user_id)} on {when:%Y-%m-%d %H:%M} UTC"
            )
            text["text"] = clip_mrkdwn(text["text"], MAX_SECTION_TEXT - len(note)) + note
            block["text"] = text
        result.append(block)
    return result
