"""Permanent Slack errors are permanent: recorded as failed with the reason, never retried.

Found by hand: a message Slack refused with msg_blocks_too_long (or restricted_action) was
retried forever (21 chat.update calls in 40 s) and /healthz only said "to update". Slack
answers these with HTTP 200 and ok:false; a too-large message is shrunk and sent once more.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from bot.config import SecretStr, Settings
from bot.db.engine import make_engine, make_session_factory, session_scope, upgrade
from bot.notify.delivery import deliver_pending
from bot.notify.outbox import HistoryLookup, PlannedPost, PreRendered, enqueue_many
from bot.slack.client import make_web_client
from bot.slack.errors import StillTooLarge, is_permanent, send_shrinking
from bot.slack.notifier import SlackNotifier
from bot.web.health import health_snapshot
from tests.support.fake_slack import FakeSlack
from tests.support.outbox import delivery_edge, let_time_pass, outbox_rows

BIG = [{"type": "section", "text": {"type": "mrkdwn", "text": f"line {i}"}} for i in range(45)]


@pytest.fixture
def factory(database_url: str) -> sessionmaker[Session]:
    engine = make_engine(database_url)
    upgrade(engine)
    return make_session_factory(engine)


def notifier(fake: FakeSlack) -> SlackNotifier:
    settings = Settings(slack_bot_token=SecretStr("xoxb-test"), slack_api_url=fake.url)
    return SlackNotifier(make_web_client(settings))


def deliver_twice(factory: sessionmaker[Session], fake: FakeSlack) -> None:
    """Deliver, let an hour pass, deliver again: a retryable failure would be retried."""
    slack = notifier(fake)
    deliver_pending(
        session_factory=factory,
        edge=delivery_edge(slack, find_posted=HistoryLookup(slack.client)),
    )
    let_time_pass(factory, dt.timedelta(hours=1))
    deliver_pending(
        session_factory=factory,
        edge=delivery_edge(slack, find_posted=HistoryLookup(slack.client)),
    )


def queue(factory: sessionmaker[Session], blocks: list[dict[str, Any]]) -> None:
    with session_scope(factory) as session:
        enqueue_many(
            session, [PlannedPost("big", "test", "C1", PreRendered("a long report", blocks))]
        )


def test_msg_blocks_too_long_is_sent_shrunk_once_then_failed_and_shown_in_healthz(
    fake_slack: FakeSlack, factory: sessionmaker[Session]
) -> None:
    queue(factory, BIG)
    fake_slack.fail("chat.postMessage", 200, times=10, error="msg_blocks_too_long")
    deliver_twice(factory, fake_slack)
    calls = fake_slack.calls_to("chat.postMessage")
    assert len(calls) == 2  # the message, then its shrunk copy; never again
    shrunk = calls[1].params["blocks"]
    assert len(shrunk) < len(BIG) and "more not shown" in str(shrunk[-1])
    row = outbox_rows(factory)["big"]
    assert row.status == "failed" and "msg_blocks_too_long" in (row.last_error or "")
    with session_scope(factory) as session:
        health = health_snapshot(session, dt.datetime.now(dt.UTC))
    assert health["outbox"]["failed"] == 1
    (failure,) = health["outbox"]["failed_recent"]
    assert failure["key"] == "big" and "msg_blocks_too_long" in failure["reason"]


def test_a_message_too_long_is_delivered_shrunk(
    fake_slack: FakeSlack, factory: sessionmaker[Session]
) -> None:
    queue(factory, BIG)
    fake_slack.fail("chat.postMessage", 200, times=1, error="msg_too_long")
    deliver_twice(factory, fake_slack)
    calls = fake_slack.calls_to("chat.postMessage")
    assert len(calls) == 2 and outbox_rows(factory)["big"].status == "delivered"
    assert len(calls[1].params["blocks"]) <= 20


@pytest.mark.parametrize(
    "error",
    ["restricted_action", "restricted_action_read_only_channel", "is_archived", "invalid_auth"],
)
def test_a_refusal_slack_documents_as_permanent_is_failed_after_one_call(
    fake_slack: FakeSlack, factory: sessionmaker[Session], error: str
) -> None:
    queue(factory, BIG[:3])
    fake_slack.fail("chat.postMessage", 200, times=10, error=error)
    deliver_twice(factory, fake_slack)
    assert len(fake_slack.calls_to("chat.postMessage")) == 1
    row = outbox_rows(factory)["big"]
    assert row.status == "failed" and (row.last_error or "").startswith(error)


def test_an_update_refused_as_too_long_is_tried_twice_then_permanent(
    fake_slack: FakeSlack,
) -> None:
    slack = notifier(fake_slack)
    fake_slack.fail("chat.update", 200, times=10, error="msg_blocks_too_long")
    with pytest.raises(StillTooLarge) as refused:
        send_shrinking(lambda t, b: slack.update("C1", "1.000001", t, b), "report", BIG)
    assert is_permanent(refused.value) and "msg_blocks_too_long" in str(refused.value)
    assert len(fake_slack.calls_to("chat.update")) == 2


def test_a_rate_limit_is_not_permanent(
    fake_slack: FakeSlack, factory: sessionmaker[Session]
) -> None:
    queue(factory, BIG[:3])
    fake_slack.fail("chat.postMessage", 200, times=1, error="ratelimited")
    deliver_twice(factory, fake_slack)
    assert outbox_rows(factory)["big"].status == "delivered"
