"""What a button click's payload says about where it came from."""

from __future__ import annotations

from typing import Any


def click_origin(body: dict[str, Any]) -> tuple[str, str, str]:
    """Return (channel, message ts, user) of a button click (block_actions payload)."""
    container = body.get("container") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id", "")
    ts = container.get("message_ts") or (body.get("message") or {}).get("ts", "")
    return channel, ts, (body.get("user") or {}).get("id", "")
