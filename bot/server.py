"""Serve the Bolt app over HTTP (`/slack/events`, `GET /healthz`) or Socket Mode."""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from slack_bolt import App
from slack_bolt.adapter.wsgi import SlackRequestHandler
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from bot.health import health_snapshot

log = logging.getLogger(__name__)

StartResponse = Callable[..., Any]


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    """One thread per request, so a slow request never delays another user's ack."""

    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http %s", format % args)


def build_wsgi_app(app: App, session_factory: sessionmaker[Session]) -> Callable[..., Any]:
    """Route /slack/events to Bolt and /healthz to a database check and the outbox backlog."""
    slack = SlackRequestHandler(app)

    def wsgi(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/healthz" and environ.get("REQUEST_METHOD") == "GET":
            return _health(session_factory, start_response)
        if path == "/slack/events":
            return slack(environ, start_response)  # type: ignore[no-any-return]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found"]

    return wsgi


def _health(factory: sessionmaker[Session], start_response: StartResponse) -> Iterable[bytes]:
    try:
        with factory() as session:
            session.execute(text("SELECT 1"))
            body: dict[str, Any] = {"status": "ok", "database": "ok"}
            body.update(health_snapshot(session, dt.datetime.now(dt.UTC)))
        status = "200 OK"
    except Exception as exc:
        log.warning("health check failed: %s", type(exc).__name__)
        status, body = "503 Service Unavailable", {"status": "error", "database": "unreachable"}
    start_response(status, [("Content-Type", "application/json")])
    return [json.dumps(body).encode()]


def make_http_server(app: App, session_factory: sessionmaker[Session], host: str,
                     port: int) -> WSGIServer:  # fmt: skip
    """Create (not start) the threaded HTTP server; port 0 picks a free port."""
    return make_server(host, port, build_wsgi_app(app, session_factory),
                       server_class=ThreadingWSGIServer, handler_class=QuietHandler)  # fmt: skip


def serve_in_thread(server: WSGIServer) -> threading.Thread:
    """Run a server in a daemon thread (tests, and serve's HTTP mode beside the scheduler)."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)  # fmt: skip
    thread.start()
    return thread
