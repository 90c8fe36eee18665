"""Concurrent review decisions: each is recorded once with what it replaced; the thread shows all.

These run on the configured backend (SQLite by default, PostgreSQL with MLCOST_TEST_DATABASE_URL)
with real connections in separate threads, so the database's own locking is what is tested.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session, sessionmaker

from bot.db.engine import session_scope
from bot.db.schema import AuditLog, Review, ReviewItem
from bot.review.decisions import record_decision
from bot.review.refresh import refresh_messages
from bot.slack.notifier import Posted
from bot.slack.render import SlackRenderer
from tests.integration.conftest import PARENT_TS
from tests.integration.conftest import REVIEW_NOW as NOW

ROUNDS = 20


class SlackMessages:
    """What Slack shows: each chat.update replaces a message, in the order the updates arrive.

    Each update waits a few milliseconds first, as a network call does, so a refresh that rendered
    earlier can reach Slack later.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.shown: dict[str, str] = {}

    def post(
        self, channel: str, text: str, blocks: list[dict[str, Any]], thread_ts: str | None = None
    ) -> Posted:
        raise AssertionError("a decision never posts")

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        time.sleep(random.uniform(0, 0.004))
        with self.lock:
            self.shown[ts] = json.dumps(blocks, ensure_ascii=False)

    def upload_png(
        self, channel: str, filename: str, data: bytes, title: str, thread_ts: str | None = None
    ) -> None:
        raise AssertionError("a decision never uploads")


def item_ids(factory: sessionmaker[Session]) -> dict[str, int]:
    with session_scope(factory) as session:
        rows = session.execute(select(ReviewItem.model_name, ReviewItem.id)).all()
    return {name: item_id for name, item_id in rows}


def reopen(factory: sessionmaker[Session]) -> None:
    """Undo every decision, as if the review had just been posted."""
    with session_scope(factory) as session:
        session.execute(
            update(ReviewItem).values(
                decision=None,
                decided_by=None,
                decided_at=None,
                reason=None,
                refresh_pending=False,
            )
        )
        session.execute(update(Review).values(status="open", closed_at=None))
        session.execute(delete(AuditLog).where(AuditLog.action == "review.decide"))


def decide(
    factory: sessionmaker[Session], slack: SlackMessages, item_id: int, user: str, decision: str
) -> None:
    """What the decision modal's submit does: record the decision, then update the thread."""
    with session_scope(factory) as session:
        record_decision(
            session=session, item_id=item_id, user_id=user, decision=decision, reason=None, now=NOW
        )
    refresh_messages(
        session_factory=factory,
        renderer=SlackRenderer(),
        notifier=slack,
        item_id=item_id,
        currency="USD",
    )


def at_once(*actions: Callable[[], None]) -> None:
    """Run the actions in threads released together; re-raise the first error."""
    barrier = threading.Barrier(len(actions))
    errors: list[BaseException] = []

    def run(action: Callable[[], None]) -> None:
        try:
            barrier.wait(timeout=30)
            action()
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(a,)) for a in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    if errors:
        raise errors[0]


def audits(factory: sessionmaker[Session]) -> list[tuple[str, str, str | None]]:
    with session_scope(factory) as session:
        rows = session.scalars(
            select(AuditLog).where(AuditLog.action == "review.decide").order_by(AuditLog.id)
        ).all()
        return [(r.actor, r.detail["decision"], r.detail["before"]) for r in rows]


def test_two_owners_deciding_two_items_at_once_close_the_review(
    review_factory: sessionmaker[Session],
) -> None:
    factory = review_factory
    ids = item_ids(factory)
    for round_ in range(ROUNDS):
        reopen(factory)
        slack = SlackMessages()
        at_once(
            partial(decide, factory, slack, ids["recsys"], "U0AAA111", "kill"),
            partial(decide, factory, slack, ids["search"], "U0AAA113", "keep"),
        )
        with session_scope(factory) as session:
            ranking = session.scalars(select(Review).where(Review.team_name == "ranking")).one()
            assert ranking.status == "decided", f"round {round_}: the review stayed open"
            assert not any(i.refresh_pending for i in ranking.items), f"round {round_}"
        assert "All decided" in slack.shown[PARENT_TS], f"round {round_}: {slack.shown[PARENT_TS]}"
        assert sorted(audits(factory)) == [
            ("U0AAA111", "kill", None),
            ("U0AAA113", "keep", None),
        ]


def test_two_clicks_on_one_item_audit_what_each_replaced(
    review_factory: sessionmaker[Session],
) -> None:
    factory = review_factory
    recsys = item_ids(factory)["recsys"]
    for round_ in range(ROUNDS):
        reopen(factory)
        slack = SlackMessages()
        at_once(
            partial(decide, factory, slack, recsys, "U0AAA111", "kill"),
            partial(decide, factory, slack, recsys, "U0AAA112", "keep"),
        )
        chain = audits(factory)
        assert [before for _, _, before in chain] == [None, chain[0][1]], f"round {round_}: {chain}"
        with session_scope(factory) as session:
            item = session.get(ReviewItem, recsys)
            assert item is not None and (item.decided_by, item.decision) == chain[1][:2]
            assert not item.refresh_pending, f"round {round_}: shown, yet still flagged"
        shown = slack.shown[next(ts for ts in slack.shown if ts != PARENT_TS)]
        assert f"*{'Kill' if chain[1][1] == 'kill' else 'Keep'}* — decided by <@{chain[1][0]}>" in (
            shown
        ), f"round {round_}: the item message shows an older decision"


def test_a_double_submit_of_the_same_decision_is_recorded_once(
    review_factory: sessionmaker[Session],
) -> None:
    factory = review_factory
    recsys = item_ids(factory)["recsys"]
    for round_ in range(ROUNDS // 2):
        reopen(factory)
        slack = SlackMessages()
        at_once(
            partial(decide, factory, slack, recsys, "U0AAA111", "kill"),
            partial(decide, factory, slack, recsys, "U0AAA111", "kill"),
        )
        assert audits(factory) == [("U0AAA111", "kill", None)], f"round {round_}"
    decide(factory, SlackMessages(), recsys, "U0AAA111", "keep")  # a real change is recorded
    assert audits(factory) == [("U0AAA111", "kill", None), ("U0AAA111", "keep", "kill")]
