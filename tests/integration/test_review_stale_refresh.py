"""A review refresh that fails after its stale update reached Slack must not leave it shown.

Found by the chaos test (SQLite, seed 1, before this was pinned): two decisions on `churn` sent
at once to the app; the item's message ended showing the first ("Keep") while the item and its
audit said the second ("Needs discussion"). The first submission's refresh rendered before the
second decision, its chat.update reached Slack after the second refresh had finished (a 429
retry delays it by a second), then its parent update failed; the second refresh had already
cleared the item's flag, so neither the handler nor the refresh job ever showed the newer state.

The rule that fixes it (refresh_messages): a refresh that does not end with a confirmed round
flags its item and bumps the review's version. The other tests here are the interleavings that
rule has to survive: the newer refresh checking after the stale one's mark, and a stale refresh
that runs out of rounds instead of failing.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

import bot.review.refresh
from bot.db.engine import session_scope
from bot.db.schema import ReviewItem
from bot.review.decisions import record_decision
from bot.review.refresh import refresh_messages, refresh_pending_messages
from bot.slack.render import SlackRenderer
from tests.integration.conftest import PARENT_TS
from tests.integration.conftest import REVIEW_NOW as NOW
from tests.support.update_only_notifier import UpdateOnlyNotifier


class Slack(UpdateOnlyNotifier):
    """What Slack shows: each chat.update replaces a message, in the order updates arrive."""

    def __init__(self, shown: dict[str, str]) -> None:
        self.shown = shown

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        self.shown[ts] = json.dumps(blocks, ensure_ascii=False)


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


def recsys(factory: sessionmaker[Session]) -> tuple[int, str]:
    with session_scope(factory) as session:
        item = session.scalars(select(ReviewItem).where(ReviewItem.model_name == "recsys")).one()
        assert item.message_ts
        return item.id, item.message_ts


def pending(factory: sessionmaker[Session], item_id: int) -> bool:
    with session_scope(factory) as session:
        return session.get_one(ReviewItem, item_id).refresh_pending


def decide(factory: sessionmaker[Session], item_id: int, user: str, decision: str) -> None:
    with session_scope(factory) as session:
        record_decision(
            session=session, item_id=item_id, user_id=user, decision=decision, reason=None, now=NOW
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
        refresh_messages(
            session_factory=factory,
            renderer=SlackRenderer(),
            notifier=Slack(shown),
            item_id=item_id,
            currency="USD",
        )

    decide(factory, item_id, "U0AAA111", "kill")
    with pytest.raises(TimeoutError):  # the handler logs this and leaves it to the refresh job
        refresh_messages(
            session_factory=factory,
            item_id=item_id,
            currency="USD",
            renderer=SlackRenderer(),
            notifier=SlowThenLost(shown, second_decision_and_its_refresh),
        )
    assert "*Kill*" in shown[item_ts]  # the stale render reached Slack last
    refresh_pending_messages(
        session_factory=factory, renderer=SlackRenderer(), notifier=Slack(shown), currency="USD"
    )
    assert "*Keep* — decided by <@U0AAA112>" in shown[item_ts], "Slack shows an older decision"


class Gated(Slack):
    """Each update first waits for `before_item` / `before_parent` (if set), then lands; after an
    item update lands, `item_landed` is set. `parent_fails` makes the parent update time out."""

    def __init__(
        self,
        shown: dict[str, str],
        *,
        before_item: threading.Event | None = None,
        before_parent: threading.Event | None = None,
        parent_fails: bool = False,
        rendered: threading.Event | None = None,
    ) -> None:
        super().__init__(shown)
        self.before_item, self.before_parent = before_item, before_parent
        self.parent_fails, self.rendered = parent_fails, rendered
        self.item_landed = threading.Event()

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        gate = self.before_parent if ts == PARENT_TS else self.before_item
        if ts != PARENT_TS and self.rendered is not None:
            self.rendered.set()
        if gate is not None:
            assert gate.wait(10), "the interleaving did not happen"
        if ts == PARENT_TS and self.parent_fails:
            raise TimeoutError("timed out")
        super().update(channel, ts, text, blocks)
        if ts != PARENT_TS:
            self.item_landed.set()


def test_a_refresh_that_finished_before_a_stale_refresh_failed_does_not_clear_its_mark(
    review_factory: sessionmaker[Session],
) -> None:
    """B (newer) updates the item; A's stale item update lands; A's parent update fails and A
    marks the thread; only then does B's parent update return and B check. B must not clear."""
    factory = review_factory
    item_id, item_ts = recsys(factory)
    shown: dict[str, str] = {}
    a_rendered, a_done = threading.Event(), threading.Event()
    b_item_landed = threading.Event()
    errors: list[BaseException] = []

    def refresh_a() -> None:
        try:
            refresh_messages(
                session_factory=factory,
                item_id=item_id,
                currency="USD",
                renderer=SlackRenderer(),
                notifier=Gated(
                    shown, rendered=a_rendered, before_item=b_item_landed, parent_fails=True
                ),
            )
        except BaseException as exc:  # which one is checked below
            errors.append(exc)
        finally:
            a_done.set()

    decide(factory, item_id, "U0AAA111", "kill")
    a = threading.Thread(target=refresh_a)
    a.start()
    assert a_rendered.wait(10)
    decide(factory, item_id, "U0AAA112", "keep")
    b_slack = Gated(shown, before_parent=a_done)
    b_slack.item_landed = b_item_landed
    refresh_messages(
        session_factory=factory,
        renderer=SlackRenderer(),
        notifier=b_slack,
        item_id=item_id,
        currency="USD",
    )
    a.join(10)
    assert [type(e) for e in errors] == [TimeoutError]
    refresh_pending_messages(
        session_factory=factory, renderer=SlackRenderer(), notifier=Slack(shown), currency="USD"
    )
    assert "*Keep* — decided by <@U0AAA112>" in shown[item_ts], "Slack shows an older decision"
    assert not pending(factory, item_id)


def test_a_refresh_that_runs_out_of_rounds_after_a_stale_update_leaves_the_thread_pending(
    review_factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A's stale update lands after B showed the newer decision and cleared the flag; A then
    finds a newer version but has no round left: the thread must stay pending."""
    factory = review_factory
    monkeypatch.setattr(bot.review.refresh, "REFRESH_ROUNDS", 1)
    item_id, item_ts = recsys(factory)
    shown: dict[str, str] = {}

    def second_decision_and_its_refresh() -> None:
        decide(factory, item_id, "U0AAA112", "keep")
        refresh_messages(
            session_factory=factory,
            renderer=SlackRenderer(),
            notifier=Slack(shown),
            item_id=item_id,
            currency="USD",
        )

    class SlowItem(Slack):
        def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
            if ts != PARENT_TS:
                second_decision_and_its_refresh()
            super().update(channel, ts, text, blocks)

    decide(factory, item_id, "U0AAA111", "kill")
    shown_now = refresh_messages(
        session_factory=factory,
        renderer=SlackRenderer(),
        notifier=SlowItem(shown),
        item_id=item_id,
        currency="USD",
    )
    assert not shown_now
    assert "*Kill*" in shown[item_ts]  # the stale render reached Slack last
    assert pending(factory, item_id)
    refresh_pending_messages(
        session_factory=factory, renderer=SlackRenderer(), notifier=Slack(shown), currency="USD"
    )
    assert "*Keep* — decided by <@U0AAA112>" in shown[item_ts], "Slack shows an older decision"


def test_a_stale_parent_update_that_lands_after_a_sibling_refresh_is_shown_again(
    review_factory: sessionmaker[Session],
) -> None:
    """The parent message is shared: A (recsys) renders "1 of 2"; meanwhile `search` is decided
    and its refresh shows "all decided" and clears its flag; then A's parent update lands and its
    answer is lost. recsys's flag must bring the parent back to "all decided"."""
    factory = review_factory
    item_id, _ = recsys(factory)
    with session_scope(factory) as session:
        search_id = session.scalars(
            select(ReviewItem.id).where(ReviewItem.model_name == "search")
        ).one()
    shown: dict[str, str] = {}

    class LandsThenLost(Slack):
        def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
            if ts == PARENT_TS:
                decide(factory, search_id, "U0AAA113", "keep")
                refresh_messages(
                    session_factory=factory,
                    renderer=SlackRenderer(),
                    notifier=Slack(shown),
                    item_id=search_id,
                    currency="USD",
                )
                assert "all decided" in shown[PARENT_TS].lower()
                super().update(channel, ts, text, blocks)
                raise TimeoutError("timed out")  # it landed, but its answer was lost
            super().update(channel, ts, text, blocks)

    decide(factory, item_id, "U0AAA111", "kill")
    with pytest.raises(TimeoutError):
        refresh_messages(
            session_factory=factory,
            renderer=SlackRenderer(),
            notifier=LandsThenLost(shown),
            item_id=item_id,
            currency="USD",
        )
    assert "Decided 1 of 2" in shown[PARENT_TS]  # the stale parent reached Slack last
    assert not pending(factory, search_id)
    refresh_pending_messages(
        session_factory=factory, renderer=SlackRenderer(), notifier=Slack(shown), currency="USD"
    )
    assert "all decided" in shown[PARENT_TS].lower(), "the parent shows an older state"
    assert not pending(factory, item_id)
