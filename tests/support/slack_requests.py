"""Signed Slack requests as Slack sends them: one builder per payload kind, one signer."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from typing import Any
from urllib.parse import urlencode

SECRET = "test-signing-secret"
TEAM = "T1"
FORM = "application/x-www-form-urlencoded"
JSON = "application/json"


def sign(body: str | bytes, timestamp: str, secret: str = SECRET) -> str:
    """Return Slack's `v0=` signature of a body sent at a timestamp."""
    raw = body.encode() if isinstance(body, str) else body
    base = b"v0:" + timestamp.encode() + b":" + raw
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def signed_headers(
    body: str | bytes,
    *,
    content_type: str,
    secret: str = SECRET,
    timestamp: int | str | None = None,
) -> dict[str, str]:
    """Return the headers Slack sends with a body: content type, timestamp and signature."""
    ts = str(timestamp if timestamp is not None else int(time.time()))
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": sign(body, ts, secret),
    }


def slash_command(
    text: str, *, user: str, channel: str, response_url: str, trigger_id: str = "trig-1"
) -> str:
    """Return the form body of `/mlcost <text>` typed by a user in a channel."""
    form = {
        "command": "/mlcost",
        "text": text,
        "user_id": user,
        "channel_id": channel,
        "team_id": TEAM,
        "response_url": response_url,
        "trigger_id": trigger_id,
    }
    return urlencode(form)


def interactive(payload: dict[str, Any]) -> str:
    """Return the form body Slack posts for an interactivity payload (clicks, submissions)."""
    return urlencode({"payload": json.dumps(payload)})


def event_callback(event: dict[str, Any]) -> str:
    """Return the JSON body of an Events API callback carrying one event."""
    return json.dumps(
        {
            "type": "event_callback",
            "team_id": TEAM,
            "event": event,
            "event_id": f"Ev{time.time_ns()}",
            "event_time": int(time.time()),
        }
    )


def button_click(
    *,
    user: str,
    action_id: str,
    value: str,
    channel: str,
    message_ts: str,
    message_text: str | None,
    response_url: str,
    message_blocks: list[dict[str, Any]] | None = None,
    block_id: str = "b",
) -> dict[str, Any]:
    """Return the block_actions payload of a button clicked in a channel message."""
    message: dict[str, Any] = {"ts": message_ts, "text": message_text}
    if message_blocks is not None:
        message["blocks"] = message_blocks
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user},
        "api_app_id": "A1",
        "token": "legacy",
        "team": {"id": TEAM},
        # Slack gives every click its own trigger, so no two bodies are byte-identical
        "trigger_id": f"trig-{uuid.uuid4().hex[:12]}",
        "response_url": response_url,
        "container": {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel,
            "is_ephemeral": False,
        },
        "channel": {"id": channel, "name": "x"},
        "message": message,
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": block_id,
                "value": value,
                "action_ts": str(time.time()),
            }
        ],
    }


def posted_button_click(
    channel: str,
    message: dict[str, Any],
    *,
    user: str,
    action_id: str,
    block_id: str,
    response_url: str,
) -> dict[str, Any]:
    """Return the payload of a click on the button `action_id` of a message the bot posted."""
    button = next(
        e
        for b in message["blocks"]
        if b["type"] == "actions"
        for e in b["elements"]
        if e["action_id"] == action_id
    )
    return button_click(
        user=user,
        action_id=action_id,
        value=button["value"],
        channel=channel,
        message_ts=message["ts"],
        message_text=message["text"],
        message_blocks=message["blocks"],
        block_id=block_id,
        response_url=response_url,
    )


def view_submission(
    view: dict[str, Any], *, user: str, block: str, value: str | None
) -> dict[str, Any]:
    """Return the view_submission payload of a modal with one text input typed into."""
    typed = {block: {block: {"type": "plain_text_input", "value": value}}}
    return {
        "type": "view_submission",
        "user": {"id": user},
        "team": {"id": TEAM},
        "api_app_id": "A1",
        "token": "legacy",
        # Slack gives every submission its own trigger and view hash
        "trigger_id": f"trig-{uuid.uuid4().hex[:12]}",
        "view": {
            **view,
            "id": "V1",
            "hash": uuid.uuid4().hex[:10],
            "type": "modal",
            "state": {"values": typed},
        },
    }
