"""Fixtures for the Slack tier: the real app on a fresh database, and on the demo organisation."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterator

import pytest

from bot.db.engine import make_engine, upgrade
from tests.conftest import create_database_url, drop_database_url
from tests.support.chart_cache import charts_rendered_once
from tests.support.demo_org import NOW, TINY_PNG, seed_demo
from tests.support.fake_slack import FakeSlack
from tests.support.slack_app import SlackHarness, seed, start_app


@pytest.fixture(scope="session", autouse=True)
def _charts_rendered_once() -> Iterator[None]:
    """Draw each distinct chart once per session (many tests post the same review charts)."""
    with charts_rendered_once():
        yield


@pytest.fixture
def retry_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record, instead of sleeping, the seconds slack_sdk waits before retrying a 429."""
    import types

    from slack_sdk.http_retry import builtin_handlers

    waits: list[float] = []
    monkeypatch.setattr(builtin_handlers, "time", types.SimpleNamespace(sleep=waits.append))
    return waits


@pytest.fixture
def tiny_charts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand a tiny PNG in for the command handlers' chart rendering (for direct dispatch)."""
    # model and team reply through spend_reply.chart_reply, which renders the chart
    monkeypatch.setattr(
        "handlers.subcommands.spend_reply.render_spend_chart", lambda *a, **kw: TINY_PNG
    )


@pytest.fixture
def clock() -> Callable[[], dt.datetime]:
    """A fixed clock: 2026-11-20 12:00 UTC, late in the demo month."""
    return lambda: dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def slack(
    migrated_database_url: str, fake_slack: FakeSlack, clock: Callable[[], dt.datetime]
) -> Iterator[SlackHarness]:
    """The real app on a fresh database, taking requests in process."""
    harness, stop = start_app(migrated_database_url, fake_slack, clock)
    yield harness
    stop()


@pytest.fixture
def http_slack(
    migrated_database_url: str, fake_slack: FakeSlack, clock: Callable[[], dt.datetime]
) -> Iterator[SlackHarness]:
    """The real app served over HTTP by bot/web/server.py on a fresh database."""
    harness, stop = start_app(migrated_database_url, fake_slack, clock, http=True)
    yield harness
    stop()


@pytest.fixture
def second_app(slack: SlackHarness, clock: Callable[[], dt.datetime]) -> Iterator[SlackHarness]:
    """A new app instance (a restart, or another replica) on the same database and fake Slack."""
    harness, stop = start_app(slack.services.settings.database_url, slack.fake, clock)
    yield harness
    stop()


@pytest.fixture
def small_cap_slack(
    migrated_database_url: str, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> Iterator[SlackHarness]:
    """The app over HTTP with MLCOST_MAX_BODY_BYTES=2000."""
    monkeypatch.setenv("MLCOST_MAX_BODY_BYTES", "2000")
    harness, stop = start_app(
        migrated_database_url, fake_slack, lambda: dt.datetime.now(dt.UTC), http=True
    )
    yield harness
    stop()


@pytest.fixture(scope="module")
def demo_slack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlackHarness]:
    """The real app on the demo organisation (also over HTTP); tests must not change the data."""
    url = create_database_url(tmp_path_factory.mktemp("demo"))
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    fake = FakeSlack().start()
    harness, stop = start_app(url, fake, lambda: NOW, http=True)
    seed(harness, seed_demo)
    yield dataclasses.replace(harness, over_http=False)
    stop()
    fake.stop()
    drop_database_url(url)


@pytest.fixture
def demo(demo_slack: SlackHarness) -> SlackHarness:
    """The demo app, in process, with the fake's call record cleared."""
    demo_slack.fake.calls.clear()
    return demo_slack
