"""A Notifier that records every call instead of reaching Slack, for tests of the domain."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.slack.guard import checked_message
from bot.slack.notifier import Posted


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
