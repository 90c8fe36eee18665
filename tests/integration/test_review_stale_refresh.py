"""A review refresh that fails after its stale update reached Slack must not leave it shown.

Found by the chaos test (SQLite, seed 1, before this was pinned): two decisions on `churn` sent
at once to the app; the item's message ended showing the first ("Keep") while the item and its
audit said the second ("Needs discussion"). The first submission's refresh rendered before the
second decision, its chat.update reached Slack after the second refresh had finished (a 429
retry delays it by a second), then its parent update failed; the second refresh had already
cleared the item's flag, so neither the handler nor the refresh job ever showed the newer state.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from bot.db import session_scope
from bot.models import ReviewItem
from bot.review import record_decision, refresh_messages, refresh_pending_messages
from bot.slack.notifier import Posted
from tests.integration.conftest import PARENT_TS
from tests.integration.conftest import REVIEW_NOW as NOW


class Slack:
    """What Slack shows: each chat.update replaces a message, in the order updates arrive."""

    def __init__(self, shown: dict[str, str]) -> None:
        self.shown = shown

    def post(self, channel: str, text: str, blocks: list[dict[str, Any]],
             thread_ts: str | None = None) -> Posted:  # fmt: skip
        raise AssertionError("a decision never posts")

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        self.shown[ts] = json.dumps(blocks, ensure_ascii=False)

    def upload_png(self, channel: str, filename: str, data: bytes, title: str,
                   thread_ts: str | None = None) -> None:  # fmt: skip
        raise AssertionError("a decision never uploads")


class SlowThenLost(Slack):
    """The item update is in flight while `meanwhile` runs, then lands; the parent update's
    answer is lost (a timeout)."""

    def __init__(self, shown: dict[str, str], meanwhile: Any) -> None:
        super().__init__(shown)
        self.meanwhile = meanwhile

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        if ts == PARENT_TS:
            raise TimeoutError("timed out")
        self.meanwhile()
        super().update(channel, ts, text, blocks)


def decide(factory: sessionmaker[Session], item_id: int, user: str, decision: str) -> None:
    with session_scope(factory) as session:
        record_decision(session=session, item_id=item_id, user_id=user, decision=decision,
                        reason=None, now=NOW)  # fmt: skip


@pytest.mark.xfail(
    strict=True,
    reason="NEW BUG (bot/review.py refresh_messages): a refresh that fails after its stale "
    "update landed leaves it shown; a concurrent refresh already cleared the item's flag",
)
def test_a_refresh_that_fails_after_a_stale_update_is_retried_until_slack_shows_the_last(
    review_factory: sessionmaker[Session],
) -> None:
    factory = review_factory
    with session_scope(factory) as session:
        item = session.scalars(select(ReviewItem).where(ReviewItem.model_name == "recsys")).one()
        item_id, item_ts = item.id, item.message_ts
    assert item_ts
    shown: dict[str, str] = {}

    def second_decision_and_its_refresh() -> None:
        decide(factory, item_id, "U0AAA112", "keep")
        refresh_messages(session_factory=factory, notifier=Slack(shown), item_id=item_id,
                         currency="USD")  # fmt: skip

    decide(factory, item_id, "U0AAA111", "kill")
    with pytest.raises(TimeoutError):  # the handler logs this and leaves it to the refresh job
        refresh_messages(session_factory=factory, item_id=item_id, currency="USD",
                         notifier=SlowThenLost(shown, second_decision_and_its_refresh))  # fmt: skip
    assert "*Kill*" in shown[item_ts]  # the stale render reached Slack last
    refresh_pending_messages(session_factory=factory, notifier=Slack(shown), currency="USD")
    assert "*Keep* — decided by <@U0AAA112>" in shown[item_ts], "Slack shows an older decision"
