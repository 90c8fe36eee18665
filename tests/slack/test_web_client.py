"""The WebClient mlcost builds: how long it waits, and which failures it retries by itself."""

from __future__ import annotations

import pytest

from bot.config import SecretStr, Settings
from bot.slack.client import make_web_client
from bot.slack.notifier import SLACK_FAILURES, SlackNotifier
from tests.support.fake_slack import FakeSlack


def settings_for(fake_slack: FakeSlack, **kw: object) -> Settings:
    return Settings(slack_bot_token=SecretStr("xoxb-test"), slack_api_url=fake_slack.url, **kw)


def test_a_slow_post_times_out_after_the_configured_seconds_and_is_not_retried(
    fake_slack: FakeSlack,
) -> None:
    # Slack acts on the post, then answers after the client gave up: the outcome is unknown, so
    # the client must not post again by itself (only the outbox, after a lookup, may)
    fake_slack.delays["chat.postMessage"] = 1.5
    client = make_web_client(settings_for(fake_slack, MLCOST_SLACK_TIMEOUT_SECONDS="0.3"))
    with pytest.raises(SLACK_FAILURES):  # with the default 15 s it would have succeeded
        SlackNotifier(client).post("C1", "hello", [])
    assert len(fake_slack.calls_to("chat.postMessage")) == 1
    assert [m["text"] for m in fake_slack.messages.values()] == ["hello"]  # it did reach Slack


def test_a_rate_limited_call_is_retried_after_retry_after(
    fake_slack: FakeSlack, retry_waits: list[float]
) -> None:
    fake_slack.fail("chat.postMessage", 429, times=1, retry_after=1)
    client = make_web_client(settings_for(fake_slack))
    posted = SlackNotifier(client).post("C1", "hello", [])
    assert posted.ts and len(fake_slack.calls_to("chat.postMessage")) == 2
    assert len(fake_slack.messages) == 1
    assert len(retry_waits) == 1 and 1 <= retry_waits[0] < 2  # Retry-After, plus jitter


def test_a_server_error_is_not_retried_by_the_client(fake_slack: FakeSlack) -> None:
    fake_slack.fail("chat.postMessage", 500, times=1)
    client = make_web_client(settings_for(fake_slack))
    with pytest.raises(SLACK_FAILURES):
        SlackNotifier(client).post("C1", "hello", [])
    assert len(fake_slack.calls_to("chat.postMessage")) == 1


def test_the_default_timeout_is_fifteen_seconds() -> None:
    assert Settings().slack_timeout_seconds == 15.0
