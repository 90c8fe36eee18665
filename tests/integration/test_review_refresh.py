"""A review thread refresh shows committed state and clears its flag only when nothing is newer."""

from __future__ import annotations

import datetime as dt
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web import SlackResponse
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from bot.db.engine import session_scope
from bot.db.schema import ReviewItem
from bot.review.decisions import record_decision
from bot.review.refresh import REFRESH_ROUNDS, refresh_messages, refresh_pending_messages
from bot.slack.render import SlackRenderer
from tests.integration.conftest import PARENT_TS, REVIEW_NOW
from tests.support.update_only_notifier import UpdateOnlyNotifier

NOW = REVIEW_NOW


class RecordingNotifier(UpdateOnlyNotifier):
    """Record updates; optionally run something during each of the first ones (a click)."""

    def __init__(self, during_update: Any = None, times: int = 1) -> None:
        self.updates: list[tuple[str, str, str]] = []
        self.during_update = during_update
        self.times = times

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        self.updates.append((channel, ts, str(blocks)))
        if self.during_update is not None and self.times > 0:
            self.times -= 1
            self.during_update()


def recsys_id(factory: sessionmaker[Session]) -> int:
    with session_scope(factory) as session:
        return session.scalars(select(ReviewItem.id).where(ReviewItem.model_name == "recsys")).one()


def decide(
    factory: sessionmaker[Session], item_id: int, user: str, decision: str, now: dt.datetime
) -> None:
    with session_scope(factory) as session:
        record_decision(
            session=session, item_id=item_id, user_id=user, decision=decision, reason=None, now=now
        )


def stored(factory: sessionmaker[Session], item_id: int) -> ReviewItem:
    with session_scope(factory) as session:
        item = session.get(ReviewItem, item_id)
        assert item is not None
        return item


def test_a_refresh_clears_the_flag_of_the_decision_it_showed(
    review_factory: sessionmaker[Session],
) -> None:
    item_id = recsys_id(review_factory)
    decide(review_factory, item_id, "U0AAA111", "kill", NOW)
    assert stored(review_factory, item_id).refresh_pending
    notifier = RecordingNotifier()
    assert refresh_messages(
        session_factory=review_factory,
        renderer=SlackRenderer(),
        notifier=notifier,
        item_id=item_id,
        currency="USD",
    )
    assert not stored(review_factory, item_id).refresh_pending
    assert [ts for _, ts, _ in notifier.updates][1:] == [PARENT_TS]
    assert "*Kill* — decided by <@U0AAA111>" in notifier.updates[0][2]


def test_a_decision_made_during_a_refresh_is_shown_by_another_round(
    review_factory: sessionmaker[Session],
) -> None:
    item_id = recsys_id(review_factory)
    decide(review_factory, item_id, "U0AAA111", "kill", NOW)

    def owner_changes_their_mind() -> None:
        decide(review_factory, item_id, "U0AAA112", "keep", NOW + dt.timedelta(minutes=1))

    notifier = RecordingNotifier(owner_changes_their_mind)
    assert refresh_messages(
        session_factory=review_factory,
        renderer=SlackRenderer(),
        notifier=notifier,
        item_id=item_id,
        currency="USD",
    )
    assert len(notifier.updates) == 4  # item and parent, twice
    assert "*Keep* — decided by <@U0AAA112>" in notifier.updates[2][2]
    latest = stored(review_factory, item_id)
    assert (latest.decision, latest.refresh_pending) == ("keep", False)


def test_decisions_landing_in_every_round_leave_the_flag_for_the_refresh_job(
    review_factory: sessionmaker[Session],
) -> None:
    item_id = recsys_id(review_factory)
    decide(review_factory, item_id, "U0AAA111", "kill", NOW)
    clicks = iter(range(1, 100))

    def another_click() -> None:
        minutes = next(clicks)
        decide(
            review_factory,
            item_id,
            "U0AAA111",
            ("keep", "kill")[minutes % 2],
            NOW + dt.timedelta(minutes=minutes),
        )

    notifier = RecordingNotifier(another_click, times=2 * REFRESH_ROUNDS)
    assert not refresh_messages(
        session_factory=review_factory,
        renderer=SlackRenderer(),
        notifier=notifier,
        item_id=item_id,
        currency="USD",
    )
    assert len(notifier.updates) == 2 * REFRESH_ROUNDS
    assert stored(review_factory, item_id).refresh_pending


class RateLimitedSlack(RecordingNotifier):
    """Slack answering 429 to every update, as it does when the app exceeds its rate tier."""

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        self.updates.append((channel, ts, str(blocks)))
        response = SlackResponse(
            client=None,
            http_verb="POST",
            api_url="chat.update",
            req_args={},
            data={"ok": False, "error": "ratelimited"},
            headers={"Retry-After": "30"},
            status_code=429,
        )
        raise SlackApiError("ratelimited", response)


def test_a_rate_limit_ends_the_refresh_round_and_keeps_every_flag(
    review_factory: sessionmaker[Session],
) -> None:
    with session_scope(review_factory) as session:
        ids = list(session.scalars(select(ReviewItem.id).order_by(ReviewItem.id)))
    for minutes, item_id in enumerate(ids):
        decide(review_factory, item_id, "U0ADMIN01", "keep", NOW + dt.timedelta(minutes=minutes))
    slack = RateLimitedSlack()
    report = refresh_pending_messages(
        session_factory=review_factory, renderer=SlackRenderer(), notifier=slack, currency="USD"
    )
    assert len(slack.updates) == 1  # Slack asked to wait: the others are not tried now
    assert (report.refreshed, report.given_up, sorted(report.retrying)) == ([], [], ids)
    assert all(stored(review_factory, i).refresh_pending for i in ids)
    assert all(stored(review_factory, i).refresh_error is None for i in ids)
