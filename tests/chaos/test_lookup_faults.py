"""A post whose answer was lost must not be posted again because the lookup was rate limited.

Found by the chaos test (seed 1 on SQLite: `chaos:1:0` posted twice): the post timed out after
Slack had posted it; on the retry, conversations.history answered 429 twice (the client's one
retry included) and the outbox, treating any lookup error as "unknown", posted it again.
A lookup that fails for a transient reason (429, 5xx, network) is retried later, like a
post; only a lookup that cannot work (not_in_channel, missing scope) falls back to posting.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select

from bot.config import SecretStr, Settings
from bot.db.engine import make_engine, make_session_factory, session_scope, upgrade
from bot.db.schema import OutboxMessage
from bot.notify.delivery import deliver_pending
from bot.notify.outbox import HistoryLookup, PlannedPost, PreRendered, enqueue_many
from bot.slack.client import make_web_client
from bot.slack.notifier import SlackNotifier
from tests.support.fake_slack import FakeSlack
from tests.support.outbox import delivery_edge


def test_a_rate_limited_lookup_after_a_lost_answer_does_not_post_again(
    fake_slack: FakeSlack, database_url: str
) -> None:
    settings = Settings(
        slack_bot_token=SecretStr("xoxb-test"),
        slack_api_url=fake_slack.url,
        MLCOST_SLACK_TIMEOUT_SECONDS="0.3",
    )
    client = make_web_client(settings)
    engine = make_engine(database_url)
    upgrade(engine)
    factory = make_session_factory(engine)
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "alert"}}]
    with session_scope(factory) as session:
        enqueue_many(session, [PlannedPost("k1", "test", "C1", PreRendered("alert", blocks))])

    def deliver(after: dt.timedelta) -> None:
        deliver_pending(
            session_factory=factory,
            edge=delivery_edge(SlackNotifier(client), find_posted=HistoryLookup(client)),
            now=dt.datetime.now(dt.UTC) + after,
        )

    # Slack posts, then answers after the client gave up
    fake_slack.delays["chat.postMessage"] = 1.0
    deliver(dt.timedelta(0))
    assert len(fake_slack.calls_to("chat.postMessage")) == 1
    fake_slack.delays.pop("chat.postMessage")
    # the lookup is rate limited, and so is the client's own retry
    fake_slack.fail("conversations.history", 429, times=2, retry_after=1)
    deliver(dt.timedelta(minutes=5))
    deliver(dt.timedelta(minutes=10))  # the lookup works now: the post is found
    try:
        assert len(fake_slack.calls_to("chat.postMessage")) == 1, "posted twice"
        with session_scope(factory) as session:
            row = session.scalars(select(OutboxMessage)).one()
            assert row.status == "delivered"
    finally:
        engine.dispose()
