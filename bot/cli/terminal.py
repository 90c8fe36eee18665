"""Slack and the terminal: what a posting command does without a token; errors as plain text.

`mlcost poll`, `review post`, `gate --post` and `waste scan --post` do all their work without
SLACK_BOT_TOKEN (evaluate, record, queue in the outbox), skip the delivery, and say so with
NOT_DELIVERED; the exit code is the command's own, never set by the missing token. What is queued
is delivered by `mlcost serve`, or by the same command run again with the token.
"""

from __future__ import annotations

import re

_CODE_SPAN = re.compile(r"`([^`\n]*)`")

NOT_DELIVERED = (
    "not delivered: SLACK_BOT_TOKEN is not set; queued in the outbox for mlcost serve "
    "(or this command with the token) to deliver"
)


def terminal_text(message: str) -> str:
    """Return a message written for Slack as a terminal line: `code` spans become 'code'.

    Domain errors are worded once, for Slack and the CLI alike; the CLI prints no Slack markup.
    """
    return _CODE_SPAN.sub(r"'\1'", message).replace("`", "'")
