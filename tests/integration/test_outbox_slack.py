"""The outbox against the fake Slack Web API: leases between jobs, lookups of lost outcomes."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from bot.bootstrap import AppServices, system_clock
from bot.config import SecretStr, Settings
from bot.db.engine import session_scope
from bot.db.schema import OutboxMessage
from bot.notify.delivery import DeliveryReport, deliver_pending
from bot.notify.outbox import METADATA_EVENT, HistoryLookup
from bot.slack.client import make_web_client
from bot.slack.notifier import SlackNotifier
from tests.support.database import migrated
from tests.support.fake_slack import FakeSlack
from tests.support.jobs import run_job
from tests.support.outbox import delivery_edge, make_due, outbox_rows, post_as_the_worker, put_one


def make_services(
    database_url: str, fake_slack: FakeSlack, factory: sessionmaker[Session], clock: Any
) -> AppServices:
    settings = Settings(
        database_url=database_url,
        slack_bot_token=SecretStr("xoxb-test"),
        slack_api_url=fake_slack.url,
    )
    return AppServices(
        settings=settings, session_factory=factory, client=make_web_client(settings), clock=clock
    )


def posted_keys(fake_slack: FakeSlack) -> Counter[str]:
    return Counter(
        m["metadata"]["event_payload"]["key"]
        for m in fake_slack.messages.values()
        if m.get("metadata")
    )


def test_a_slow_poll_leases_from_the_clock_at_claim_time_so_the_delivery_job_cannot_double(
    database_url: str, fake_slack: FakeSlack
) -> None:
    started: list[dt.datetime] = []

    def clock() -> dt.datetime:
        # the poll reads the clock once before ingesting, which took an hour; later reads are now
        if not started:
            started.append(system_clock() - dt.timedelta(hours=1))
            return started[0]
        return system_clock()

    with migrated(database_url) as (_engine, factory):
        put_one(factory, "alert", text="over budget", kind="budget")
        services = make_services(database_url, fake_slack, factory, clock)

        def post_while_the_delivery_job_runs(params: dict[str, Any]) -> Any:
            if len(fake_slack.calls_to("chat.postMessage")) == 1:  # the poll's post is in flight
                run_job(services, "deliver")
            return fake_slack.respond_default("chat.postMessage", params)

        fake_slack.handlers["chat.postMessage"] = post_while_the_delivery_job_runs
        run_job(services, "poll")
        assert posted_keys(fake_slack) == {"alert": 1}
        row = outbox_rows(factory)["alert"]
        assert row.status == "delivered" and row.attempts == 1
        assert row.delivered_at is not None and row.delivered_at > started[0]


def post_then_lose_the_outcome(
    services: AppServices, key: str, thread_ts: str | None = None
) -> str:
    """Post a queued message as a worker would, then die before recording it; return its ts."""
    with session_scope(services.session_factory) as session:
        row = session.scalars(select(OutboxMessage).where(OutboxMessage.dedupe_key == key)).one()
        posted = post_as_the_worker(services.client, row, thread_ts)
        row.status, row.attempts = "sending", 1
        row.next_attempt_at = system_clock() - dt.timedelta(seconds=1)  # the lease has expired
    return posted.ts


def chatter(services: AppServices, channel: str, count: int, thread_ts: str | None = None) -> None:
    """Post other messages (ours with other keys, and people's) to a channel or thread."""
    for i in range(count):
        metadata = {"event_type": METADATA_EVENT, "event_payload": {"key": f"other{i}"}}
        services.client.chat_postMessage(
            channel=channel,
            text=f"chatter {i}",
            thread_ts=thread_ts,
            metadata=metadata if i % 2 else None,
        )


def deliver(services: AppServices) -> DeliveryReport:
    return deliver_pending(
        session_factory=services.session_factory,
        edge=delivery_edge(
            SlackNotifier(services.client), find_posted=HistoryLookup(services.client)
        ),
    )


@pytest.mark.parametrize("channel", ["C0RANKING", "U0AAA111"])  # a channel, and a DM
def test_a_thread_reply_whose_outcome_was_lost_is_found_in_the_thread_not_posted_again(
    database_url: str, fake_slack: FakeSlack, channel: str
) -> None:
    with migrated(database_url) as (_engine, factory):
        services = make_services(database_url, fake_slack, factory, system_clock)
        put_one(factory, "review:parent", text="the review", channel=channel, kind="review.parent")
        assert deliver(services).delivered == ["review:parent"]
        parent = outbox_rows(factory)["review:parent"]
        assert parent.slack_ts is not None and parent.slack_channel is not None
        put_one(
            factory,
            "review:item:alpha",
            text="alpha: keep?",
            channel=channel,
            kind="review.item",
            thread_key="review:parent",
        )
        chatter(services, parent.slack_channel, 4, thread_ts=parent.slack_ts)
        ts = post_then_lose_the_outcome(services, "review:item:alpha", parent.slack_ts)
        chatter(services, parent.slack_channel, 4, thread_ts=parent.slack_ts)

        report = deliver(services)
        assert report.recovered == ["review:item:alpha"] == report.delivered
        assert posted_keys(fake_slack)["review:item:alpha"] == 1
        row = outbox_rows(factory)["review:item:alpha"]
        assert (row.status, row.slack_ts, row.slack_channel) == (
            "delivered",
            ts,
            parent.slack_channel,
        )
        replies = fake_slack.calls_to("conversations.replies")
        assert len(replies) > 1 and replies[0].params["ts"] == parent.slack_ts  # paginated


def test_a_top_level_post_whose_outcome_was_lost_is_found_on_a_later_history_page(
    database_url: str, fake_slack: FakeSlack
) -> None:
    with migrated(database_url) as (_engine, factory):
        services = make_services(database_url, fake_slack, factory, system_clock)
        put_one(factory, "budget:alpha:50", text="alpha at 50%", channel="C0ALPHA", kind="budget")
        ts = post_then_lose_the_outcome(services, "budget:alpha:50")
        chatter(services, "C0ALPHA", 8)  # newer messages: the post is beyond the first page

        report = deliver(services)
        assert report.recovered == ["budget:alpha:50"] == report.delivered
        assert posted_keys(fake_slack)["budget:alpha:50"] == 1
        assert outbox_rows(factory)["budget:alpha:50"].slack_ts == ts
        assert len(fake_slack.calls_to("conversations.history")) > 1


def test_a_public_channel_the_bot_never_joined_still_gets_its_post(
    database_url: str, fake_slack: FakeSlack
) -> None:
    fake_slack.not_a_member("C0PUBLIC")  # posted through chat:write.public; history is not readable
    with migrated(database_url) as (_engine, factory):
        services = make_services(database_url, fake_slack, factory, system_clock)
        put_one(factory, "waste:week", text="waste digest", channel="C0PUBLIC", kind="waste")
        fake_slack.fail("chat.postMessage", 500)  # the first attempt fails; the second looks first
        assert deliver(services).failed == ["waste:week"]
        make_due(factory)

        report = deliver(services)
        assert report.delivered == ["waste:week"] and report.dead == []
        assert [c.params["channel"] for c in fake_slack.calls_to("conversations.history")] == [
            "C0PUBLIC"
        ]
        assert posted_keys(fake_slack) == {"waste:week": 1}


@pytest.mark.parametrize(
    "fault",
    [
        {"status": 429, "times": 2, "retry_after": 1},  # the client's one retry is refused too
        {"status": 500},
        {"status": 200, "error": "ratelimited"},
    ],
    ids=["429", "500", "ratelimited"],
)
def test_a_history_lookup_that_fails_for_now_does_not_post_again_and_finds_the_post_later(
    database_url: str, fake_slack: FakeSlack, fault: dict[str, Any]
) -> None:
    with migrated(database_url) as (_engine, factory):
        services = make_services(database_url, fake_slack, factory, system_clock)
        put_one(factory, "budget:alpha:90", text="alpha at 90%", channel="C0ALPHA", kind="budget")
        ts = post_then_lose_the_outcome(services, "budget:alpha:90")
        fake_slack.fail("conversations.history", **fault)

        before = system_clock()
        report = deliver(services)
        assert report.failed == ["budget:alpha:90"] and report.delivered == []
        assert posted_keys(fake_slack) == {"budget:alpha:90": 1}
        row = outbox_rows(factory)["budget:alpha:90"]
        assert row.status == "pending" and row.next_attempt_at is not None
        if fault.get("retry_after"):
            wait = row.next_attempt_at - before
            assert dt.timedelta(seconds=1) <= wait < dt.timedelta(seconds=30)  # Retry-After
        else:
            assert row.next_attempt_at > before

        make_due(factory)
        report = deliver(services)
        assert report.recovered == ["budget:alpha:90"] == report.delivered
        assert posted_keys(fake_slack) == {"budget:alpha:90": 1}
        assert outbox_rows(factory)["budget:alpha:90"].slack_ts == ts
