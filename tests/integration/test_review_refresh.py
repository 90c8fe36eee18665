"""A review thread refresh clears its flag only for the decision it showed."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.models import ReviewItem
from bot.periods import month_period
from bot.review import open_reviews, record_decision, refresh_messages
from bot.slack.notifier import Posted
from tests.economics_data import REGISTRY, seed_review_month
from tests.helpers import load_registry

NOW = dt.datetime(2026, 12, 1, 9, tzinfo=dt.UTC)


class RecordingNotifier:
    """Record updates; optionally run something during the first one (a concurrent click)."""

    def __init__(self, during_update: Any = None) -> None:
        self.updates: list[tuple[str, str]] = []
        self.during_update = during_update

    def post(self, channel: str, text: str, blocks: list[dict[str, Any]],
             thread_ts: str | None = None) -> Posted:  # fmt: skip
        raise AssertionError("a refresh never posts")

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        self.updates.append((channel, ts))
        if self.during_update is not None:
            action, self.during_update = self.during_update, None
            action()


def recsys_item(session: Session) -> ReviewItem:
    load_registry(session, REGISTRY)
    seed_review_month(session)
    (review, *_) = [
        r for r in open_reviews(session=session, month=month_period("2026-11"),
                                settings=Settings(), now=NOW)
        if any(i.model_name == "recsys" for i in r.items)
    ]  # fmt: skip
    review.parent_ts = "1700000000.000100"
    item = next(i for i in review.items if i.model_name == "recsys")
    item.message_ts = "1700000000.000200"
    session.flush()
    return item


def test_a_refresh_clears_the_flag_of_the_decision_it_showed(session: Session) -> None:
    item = recsys_item(session)
    record_decision(session=session, item_id=item.id, user_id="U0AAA111", decision="kill",
                    reason="no lift", now=NOW)  # fmt: skip
    assert item.refresh_pending
    notifier = RecordingNotifier()
    refresh_messages(session=session, notifier=notifier, item_id=item.id, currency="USD")
    session.expire_all()
    assert not session.get(ReviewItem, item.id).refresh_pending  # type: ignore[union-attr]
    assert [ts for _, ts in notifier.updates] == ["1700000000.000200", "1700000000.000100"]


def test_a_decision_made_during_a_refresh_keeps_the_flag(session: Session) -> None:
    item = recsys_item(session)
    record_decision(session=session, item_id=item.id, user_id="U0AAA111", decision="kill",
                    reason=None, now=NOW)  # fmt: skip

    def owner_changes_their_mind() -> None:
        record_decision(session=session, item_id=item.id, user_id="U0AAA112", decision="keep",
                        reason="it earns", now=NOW + dt.timedelta(minutes=1))  # fmt: skip

    refresh_messages(session=session, notifier=RecordingNotifier(owner_changes_their_mind),
                     item_id=item.id, currency="USD")  # fmt: skip
    session.expire_all()
    latest = session.scalars(select(ReviewItem).where(ReviewItem.id == item.id)).one()
    assert (latest.decision, latest.refresh_pending) == ("keep", True)  # shown next round
