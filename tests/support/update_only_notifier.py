"""A notifier base for flows that only edit posted messages (review refreshes, decisions)."""

from __future__ import annotations

from typing import Any

from bot.slack.notifier import Posted


class UpdateOnlyNotifier:
    """Fail the test on any post or upload; subclasses say what an update does."""

    def post(
        self, channel: str, text: str, blocks: list[dict[str, Any]], thread_ts: str | None = None
    ) -> Posted:
        """Fail: this flow must only update messages."""
        raise AssertionError(f"{type(self).__name__}: this flow never posts")

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        """Record or apply one chat.update."""
        raise NotImplementedError

    def upload_png(
        self, channel: str, filename: str, data: bytes, title: str, thread_ts: str | None = None
    ) -> None:
        """Fail: this flow must only update messages."""
        raise AssertionError(f"{type(self).__name__}: this flow never uploads")
