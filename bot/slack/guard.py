"""Check a message against Slack's limits before sending (the SDK does not check them all)."""

from __future__ import annotations

from typing import Any

from bot.errors import MlcostError

# Slack's limits, in one place (NOTES.md §2 and Slack's Block Kit reference). Builders clip to
# them; checked_message refuses anything that would still be rejected.
MAX_BLOCKS = 50  # per message (a view holds MAX_VIEW_BLOCKS)
MAX_SECTION_TEXT = 3000
MAX_FIELDS = 10  # per section
MAX_FIELD_TEXT = 2000  # each field
MAX_CONTEXT_ELEMENTS = 10
MAX_CONTEXT_TEXT = 3000  # each mrkdwn element
MAX_HEADER = 150  # plain_text
MAX_MODAL_TITLE = 24  # plain_text: title, submit, close
MAX_FALLBACK_TEXT = 4000  # the `text` that notifications show; Slack truncates long ones


class MessageTooLarge(MlcostError):
    """A message would be rejected by Slack."""


def checked_message(text: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """Return {text, blocks} after checking Slack's limits; raise MessageTooLarge otherwise."""
    if not text or not text.strip():
        raise MessageTooLarge("every message needs a plain-text fallback")
    if len(text) > MAX_FALLBACK_TEXT:
        raise MessageTooLarge(f"fallback text has {len(text)} characters (max {MAX_FALLBACK_TEXT})")
    if len(blocks) > MAX_BLOCKS:
        raise MessageTooLarge(f"message has {len(blocks)} blocks (max {MAX_BLOCKS})")
    for block in blocks:
        if block.get("type") == "section":
            body = (block.get("text") or {}).get("text", "")
            if len(body) > MAX_SECTION_TEXT:
                raise MessageTooLarge(f"section text has {len(body)} characters (max 3000)")
            fields = block.get("fields") or []
            if len(fields) > MAX_FIELDS:
                raise MessageTooLarge(f"section has {len(fields)} fields (max {MAX_FIELDS})")
            for field in fields:
                if len(field.get("text", "")) > MAX_FIELD_TEXT:
                    raise MessageTooLarge("a section field exceeds 2000 characters")
        if block.get("type") == "context":
            elements = block.get("elements") or []
            if len(elements) > MAX_CONTEXT_ELEMENTS:
                raise MessageTooLarge(f"context has {len(elements)} elements (max 10)")
            for element in elements:
                if len(element.get("text") or "") > MAX_CONTEXT_TEXT:
                    raise MessageTooLarge("a context element exceeds 3000 characters")
        parsed = _parsed(block)
        if parsed is not None:
            try:
                parsed.to_dict()  # runs slack_sdk's own validators (header, buttons, ...)
            except Exception as exc:
                raise MessageTooLarge(f"invalid {block.get('type')} block: {exc}") from None
    return {"text": text, "blocks": blocks}


def _parsed(block: dict[str, Any]) -> Any:
    """slack_sdk's model of a block, imported only when a message is checked (the SDK's block
    models take longer to import than a terminal report takes to print)."""
    from slack_sdk.models.blocks import Block

    return Block.parse(block)


def clip(text: str, limit: int) -> str:
    """Shorten plain text to the limit with an ellipsis (mrkdwn: bot.slack.mrkdwn.clip)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


MAX_VIEW_BLOCKS = 100


def checked_view(view: dict[str, Any]) -> dict[str, Any]:
    """Return a Home/modal view after checking its block limit and each block."""
    blocks = view.get("blocks") or []
    if not 1 <= len(blocks) <= MAX_VIEW_BLOCKS:
        raise MessageTooLarge(f"view has {len(blocks)} blocks (1 to {MAX_VIEW_BLOCKS})")
    checked_message("view", blocks[:MAX_BLOCKS])
    for start in range(MAX_BLOCKS, len(blocks), MAX_BLOCKS):
        checked_message("view", blocks[start : start + MAX_BLOCKS])
    return view


SHRUNK_BLOCKS = 20  # a message Slack refused as too large is sent again with at most this many
SHRUNK_TEXT = 1000  # ... and its fallback text and each section's text clipped to this


def shrink_message(
    text: str, blocks: list[dict[str, Any]]
) -> tuple[str, list[dict[str, Any]]] | None:
    """Return a smaller copy of a message Slack refused as too large, or None if none is smaller.

    Keeps the first blocks (and a trailing actions block, so buttons survive), says how many
    were left out and where to see them, and clips long texts.
    """
    keep = list(blocks)
    tail = [keep.pop()] if keep and keep[-1].get("type") == "actions" else []
    dropped = max(0, len(keep) - (SHRUNK_BLOCKS - 1 - len(tail)))
    if dropped:
        keep = keep[: len(keep) - dropped]
    shrunk = [_clipped(block) for block in keep]
    if dropped:
        note = f"…{dropped} more not shown here; see `/mlcost` for the full report."
        shrunk.append({"type": "context", "elements": [{"type": "mrkdwn", "text": note}]})
    shrunk += tail
    short = clip(text, SHRUNK_TEXT)
    if short == text and shrunk == blocks:
        return None
    return short, shrunk


def _clipped(block: dict[str, Any]) -> dict[str, Any]:
    body = block.get("text")
    if block.get("type") != "section" or not isinstance(body, dict):
        return block
    words = str(body.get("text") or "")
    if len(words) <= SHRUNK_TEXT:
        return block
    return {**block, "text": {**body, "text": clip(words, SHRUNK_TEXT)}}
