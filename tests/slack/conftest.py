"""The real Bolt app over HTTP in a thread, its WebClient on a fake Slack Web API."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
from pydantic import SecretStr
from sqlalchemy.orm import Session, sessionmaker

from bot.bootstrap import AppServices
from bot.config import Settings
from bot.db.engine import make_engine, make_session_factory, session_scope, upgrade
from bot.slack.app import build_app
from bot.slack.client import make_web_client
from bot.web.server import make_http_server, serve_in_thread
from tests.slack.fake_slack import FakeSlack

SECRET = "test-signing-secret"


@dataclass
class HttpResult:
    status: int
    body: str
    elapsed: float

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class SlackHarness:
    """Sends signed requests to the running app and exposes the fake Web API."""

    url: str
    fake: FakeSlack
    services: AppServices
    session_factory: sessionmaker[Session]

    def post(
        self, body: str, *, content_type: str, secret: str = SECRET, timestamp: int | None = None
    ) -> HttpResult:
        ts = str(timestamp if timestamp is not None else int(time.time()))
        signature = (
            "v0="
            + hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
        )
        request = urllib.request.Request(
            self.url + "slack/events",
            data=body.encode(),
            method="POST",
            headers={
                "Content-Type": content_type,
                "X-Slack-Request-Timestamp": ts,
                "X-Slack-Signature": signature,
            },
        )
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return HttpResult(
                    response.status, response.read().decode(), time.perf_counter() - started
                )
        except urllib.error.HTTPError as exc:
            return HttpResult(exc.code, exc.read().decode(), time.perf_counter() - started)

    def command(
        self, text: str, *, user: str = "U0AAA111", channel: str = "C0RANKING", **kw: Any
    ) -> HttpResult:
        form = {
            "command": "/mlcost",
            "text": text,
            "user_id": user,
            "channel_id": channel,
            "team_id": "T1",
            "response_url": f"{self.fake.url}respond/{int(time.time() * 1e6)}",
            "trigger_id": "trig-1",
        }
        return self.post(urlencode(form), content_type="application/x-www-form-urlencoded", **kw)

    def action(self, payload: dict[str, Any], **kw: Any) -> HttpResult:
        body = urlencode({"payload": json.dumps(payload)})
        return self.post(body, content_type="application/x-www-form-urlencoded", **kw)

    def event(self, event: dict[str, Any], **kw: Any) -> HttpResult:
        body = json.dumps(
            {
                "type": "event_callback",
                "team_id": "T1",
                "event": event,
                "event_id": f"Ev{time.time_ns()}",
                "event_time": int(time.time()),
            }
        )
        return self.post(body, content_type="application/json", **kw)

    def responses(self, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Wait for `count` response_url replies and return their payloads."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [c.params for c in self.fake.calls if c.method.startswith("respond/")]
            if len(found) >= count:
                return found
            time.sleep(0.01)
        raise AssertionError(f"wanted {count} responses; calls: {self.fake.methods()}")


@pytest.fixture
def clock() -> Callable[[], dt.datetime]:
    """A fixed clock: 2026-11-20 12:00 UTC, late in the demo month."""
    return lambda: dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def slack(
    database_url: str, fake_slack: FakeSlack, clock: Callable[[], dt.datetime]
) -> Iterator[SlackHarness]:
    """The real app served over HTTP on a fresh database."""
    harness, stop = start_app(database_url, fake_slack, clock)
    yield harness
    stop()


def start_app(
    database_url: str, fake_slack: FakeSlack, clock: Callable[[], dt.datetime]
) -> tuple[SlackHarness, Callable[[], None]]:
    """Serve the real app over HTTP on a database; return the harness and a stop function."""
    settings = Settings(
        database_url=database_url,
        slack_bot_token=SecretStr("xoxb-test"),
        slack_signing_secret=SecretStr(SECRET),
        slack_api_url=fake_slack.url,
    )
    engine = make_engine(database_url)
    upgrade(engine)
    factory = make_session_factory(engine)
    services = AppServices(
        settings=settings, session_factory=factory, client=make_web_client(settings), clock=clock
    )
    app = build_app(services)
    server = make_http_server(app, services, "127.0.0.1", 0)
    serve_in_thread(server)
    url = f"http://127.0.0.1:{server.server_address[1]}/"

    def stop() -> None:
        server.shutdown()
        server.server_close()
        engine.dispose()

    harness = SlackHarness(url=url, fake=fake_slack, services=services, session_factory=factory)
    return harness, stop


def seed(harness: SlackHarness, fn: Callable[[Session], None]) -> None:
    """Run setup code in a committed transaction."""
    with session_scope(harness.session_factory) as session:
        fn(session)
