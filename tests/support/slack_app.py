"""The real Bolt app, its WebClient on the fake Slack Web API, driven by signed requests.

Most tests hand signed requests straight to `App.dispatch` (the call bot/web/server.py makes once
its edge checks pass); the tests of that edge, and one happy path, go over HTTP.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from slack_bolt import App, BoltRequest
from sqlalchemy.orm import Session, sessionmaker

from bot.bootstrap import AppServices
from bot.config import SecretStr, Settings
from bot.db.engine import make_engine, make_session_factory, session_scope
from bot.slack.app import build_app
from bot.slack.client import make_web_client
from bot.web.server import make_http_server
from tests.support.fake_slack import FakeSlack
from tests.support.slack_requests import (
    FORM,
    JSON,
    SECRET,
    event_callback,
    interactive,
    signed_headers,
    slash_command,
)


class SettlingExecutor(ThreadPoolExecutor):
    """Bolt's listener pool, able to wait until every listener handed to it has finished."""

    def __init__(self) -> None:
        super().__init__(max_workers=5, thread_name_prefix="bolt-listener")  # Bolt's default
        self._pending: set[Future[Any]] = set()
        self._idle = threading.Condition()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future = super().submit(fn, *args, **kwargs)
        with self._idle:
            self._pending.add(future)
        future.add_done_callback(self._finished)
        return future

    def _finished(self, future: Future[Any]) -> None:
        with self._idle:
            self._pending.discard(future)
            self._idle.notify_all()

    def settle(self, timeout: float = 10.0) -> None:
        """Wait until no listener is running or queued (a listener may start another)."""
        with self._idle:
            if not self._idle.wait_for(lambda: not self._pending, timeout):
                raise AssertionError(f"{len(self._pending)} listeners still running")


@dataclass
class SlackResult:
    """What the app answered to one request."""

    status: int
    body: str
    elapsed: float

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class SlackHarness:
    """Sends signed requests to the real app (in process, or over HTTP) beside the fake Web API."""

    app: App
    listeners: SettlingExecutor
    fake: FakeSlack
    services: AppServices
    session_factory: sessionmaker[Session]
    url: str | None = None  # where bot/web/server.py serves the app, if it does
    over_http: bool = False

    def via_http(self) -> SlackHarness:
        """Return this harness sending its requests through the HTTP server instead."""
        assert self.url, "this app is not served over HTTP (use the http_slack fixture)"
        return dataclasses.replace(self, over_http=True)

    def post(
        self,
        body: str,
        *,
        content_type: str,
        secret: str = SECRET,
        timestamp: int | None = None,
    ) -> SlackResult:
        headers = signed_headers(
            body, content_type=content_type, secret=secret, timestamp=timestamp
        )
        started = time.perf_counter()
        if not self.over_http:
            as_sent: dict[str, str | Sequence[str]] = dict(headers)
            answer = self.app.dispatch(BoltRequest(body=body, headers=as_sent))
            return SlackResult(answer.status, answer.body, time.perf_counter() - started)
        assert self.url
        request = urllib.request.Request(
            self.url + "slack/events", data=body.encode(), method="POST", headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return SlackResult(
                    response.status, response.read().decode(), time.perf_counter() - started
                )
        except urllib.error.HTTPError as exc:
            return SlackResult(exc.code, exc.read().decode(), time.perf_counter() - started)

    def command(
        self, text: str, *, user: str = "U0AAA111", channel: str = "C0RANKING", **kw: Any
    ) -> SlackResult:
        response_url = f"{self.fake.url}respond/{int(time.time() * 1e6)}"
        body = slash_command(text, user=user, channel=channel, response_url=response_url)
        return self.post(body, content_type=FORM, **kw)

    def action(self, payload: dict[str, Any], **kw: Any) -> SlackResult:
        return self.post(interactive(payload), content_type=FORM, **kw)

    def event(self, event: dict[str, Any], **kw: Any) -> SlackResult:
        return self.post(event_callback(event), content_type=JSON, **kw)

    def settle(self, timeout: float = 10.0) -> None:
        """Wait until every listener the app started (after its ack) has finished.

        `/mlcost` work runs on the command handler's own pool; wait for its reply instead.
        """
        self.listeners.settle(timeout)

    def responses(self, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Wait for `count` response_url replies and return their payloads."""
        found: list[dict[str, Any]] = []

        def enough() -> bool:
            found[:] = [c.params for c in self.fake.calls if c.method.startswith("respond/")]
            return len(found) >= count

        if not self.fake.wait_until(enough, timeout):
            raise AssertionError(f"wanted {count} responses; calls: {self.fake.methods()}")
        return list(found)


def start_app(
    database_url: str,
    fake_slack: FakeSlack,
    clock: Callable[[], dt.datetime],
    *,
    http: bool = False,
) -> tuple[SlackHarness, Callable[[], None]]:
    """Build the real app on a migrated database (also over HTTP if asked); return it and a stop."""
    settings = Settings(
        database_url=database_url,
        slack_bot_token=SecretStr("xoxb-test"),
        slack_signing_secret=SecretStr(SECRET),
        slack_api_url=fake_slack.url,
    )
    engine = make_engine(database_url)
    factory = make_session_factory(engine)
    services = AppServices(
        settings=settings, session_factory=factory, client=make_web_client(settings), clock=clock
    )
    app = build_app(services)
    listeners = install_settling_executor(app)
    harness = SlackHarness(
        app=app, listeners=listeners, fake=fake_slack, services=services, session_factory=factory
    )
    server = None
    if http:
        server = make_http_server(app, services, "127.0.0.1", 0)
        server.start()
        harness = dataclasses.replace(
            harness, url=f"http://127.0.0.1:{server.port}/", over_http=True
        )

    def stop() -> None:
        if server is not None:
            server.close()
        engine.dispose()

    return harness, stop


def install_settling_executor(app: App) -> SettlingExecutor:
    """Run the app's listeners and lazy listeners on a pool the tests can wait on."""
    pool = SettlingExecutor()
    runner = app.listener_runner
    runner.listener_executor = pool
    runner.lazy_listener_runner.executor = pool  # type: ignore[attr-defined]
    return pool


def seed(harness: SlackHarness, fn: Callable[[Session], None]) -> None:
    """Run setup code in a committed transaction."""
    with session_scope(harness.session_factory) as session:
        fn(session)
