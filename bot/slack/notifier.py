"""Posting to Slack behind a small interface (the tests' fake: tests/support/fake_notifier.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from slack_sdk import WebClient
from slack_sdk.errors import SlackClientError

from bot.slack.guard import checked_message

# What a Web API call raises when Slack refuses (ok: false, HTTP errors) or cannot be reached
SLACK_FAILURES: tuple[type[Exception], ...] = (SlackClientError, OSError)


@dataclass(frozen=True)
class Posted:
    channel: str
    ts: str


class Notifier(Protocol):
    """What the domain needs from Slack."""

    def post(
        self, channel: str, text: str, blocks: list[dict[str, Any]], thread_ts: str | None = None
    ) -> Posted: ...

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None: ...

    def upload_png(
        self, channel: str, filename: str, data: bytes, title: str, thread_ts: str | None = None
    ) -> None: ...


class SlackNotifier:
    """Notifier over a slack_sdk WebClient; Slack errors propagate to the caller."""

    def __init__(self, client: WebClient) -> None:
        self.client = client

    def post(
        self, channel: str, text: str, blocks: list[dict[str, Any]], thread_ts: str | None = None
    ) -> Posted:
        message = checked_message(text, blocks)
        response = self.client.chat_postMessage(
            channel=channel, thread_ts=thread_ts, unfurl_links=False, **message
        )
        return Posted(channel=str(response["channel"]), ts=str(response["ts"]))

    def post_with_metadata(
        self,
        channel: str,
        text: str,
        blocks: list[dict[str, Any]],
        thread_ts: str | None,
        metadata: dict[str, Any],
    ) -> Posted:
        """Post with message metadata (the outbox's dedupe key)."""
        message = checked_message(text, blocks)
        response = self.client.chat_postMessage(
            channel=channel,
            thread_ts=thread_ts,
            unfurl_links=False,
            metadata=metadata,
            **message,
        )
        return Posted(channel=str(response["channel"]), ts=str(response["ts"]))

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        self.client.chat_update(channel=channel, ts=ts, **checked_message(text, blocks))

    def upload_png(
        self, channel: str, filename: str, data: bytes, title: str, thread_ts: str | None = None
    ) -> None:
        self.client.files_upload_v2(
            channel=channel, filename=filename, content=data, title=title, thread_ts=thread_ts
        )
