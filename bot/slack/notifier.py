"""Posting to Slack behind a small interface, with a fake for unit tests."""

from __future__ import annotations

from dataclasses import dataclass, field
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


@dataclass
class FakeNotifier:
    """Records every call; optionally fails the next N posts."""

    posts: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    uploads: list[dict[str, Any]] = field(default_factory=list)
    fail_next: int = 0
    error: Exception | None = None

    def post(
        self, channel: str, text: str, blocks: list[dict[str, Any]], thread_ts: str | None = None
    ) -> Posted:
        if self.fail_next > 0:
            self.fail_next -= 1
            raise self.error or RuntimeError("fake Slack failure")
        checked_message(text, blocks)
        ts = f"{1700000000 + len(self.posts)}.000100"
        self.posts.append(
            {"channel": channel, "text": text, "blocks": blocks, "thread_ts": thread_ts, "ts": ts}
        )
        return Posted(channel=channel, ts=ts)

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        checked_message(text, blocks)
        self.updates.append({"channel": channel, "ts": ts, "text": text, "blocks": blocks})

    def upload_png(
        self, channel: str, filename: str, data: bytes, title: str, thread_ts: str | None = None
    ) -> None:
        self.uploads.append(
            {
                "channel": channel,
                "filename": filename,
                "data": data,
                "title": title,
                "thread_ts": thread_ts,
            }
        )
