"""The outbox against the fake Slack Web API: leases between jobs, lookups of lost outcomes."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from bot.config import Settings
from bot.db import session_scope
from bot.models import OutboxMessage
from bot.outbox import enqueue
from bot.scheduler import run_delivery, run_poll
from bot.services import AppServices, system_clock
from bot.slack.client import make_web_client
from tests.alert_fixtures import migrated
from tests.slack.fake_slack import FakeSlack

BLOCKS = [{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    yield fake
    fake.stop()


def make_services(
    database_url: str, fake: FakeSlack, factory: sessionmaker[Session], clock: Any
) -> AppServices:
    settings = Settings(
        database_url=database_url, slack_bot_token=SecretStr("xoxb-test"), slack_api_url=fake.url
    )
    return AppServices(settings=settings, session_factory=factory,
                       client=make_web_client(settings), clock=clock)  # fmt: skip


def posted_keys(fake: FakeSlack) -> Counter[str]:
    return Counter(
        m["metadata"]["event_payload"]["key"] for m in fake.messages.values() if m.get("metadata")
    )


def outbox(factory: sessionmaker[Session]) -> dict[str, OutboxMessage]:
    with session_scope(factory) as session:
        return {m.dedupe_key: m for m in session.scalars(select(OutboxMessage))}


def test_a_slow_poll_leases_from_the_clock_at_claim_time_so_the_delivery_job_cannot_double(
    database_url: str, fake: FakeSlack
) -> None:
    started: list[dt.datetime] = []

    def clock() -> dt.datetime:
        # the poll reads the clock once before ingesting, which took an hour; later reads are now
        if not started:
            started.append(system_clock() - dt.timedelta(hours=1))
            return started[0]
        return system_clock()

    with migrated(database_url) as (_engine, factory):
        with session_scope(factory) as session:
            enqueue(session=session, dedupe_key="alert", kind="budget", channel="C1",
                    text="over budget", blocks=BLOCKS)  # fmt: skip
        services = make_services(database_url, fake, factory, clock)

        def post_while_the_delivery_job_runs(params: dict[str, Any]) -> Any:
            if len(fake.calls_to("chat.postMessage")) == 1:  # the poll's post is in flight
                run_delivery(services)
            return fake.respond_default("chat.postMessage", params)

        fake.handlers["chat.postMessage"] = post_while_the_delivery_job_runs
        run_poll(services)
        assert posted_keys(fake) == {"alert": 1}
        row = outbox(factory)["alert"]
        assert row.status == "delivered" and row.attempts == 1
        assert row.delivered_at is not None and row.delivered_at > started[0]
