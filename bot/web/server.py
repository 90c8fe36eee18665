"""Serve the Bolt app over HTTP (`/slack/events`, `GET /healthz`) or Socket Mode."""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from slack_bolt import App, BoltRequest
from slack_bolt.adapter.wsgi.http_request import WsgiHttpRequest
from slack_bolt.adapter.wsgi.http_response import WsgiHttpResponse
from slack_sdk.signature import SignatureVerifier
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from bot.bootstrap import AppServices
from bot.errors import new_reference
from bot.web.health import health_snapshot

log = logging.getLogger(__name__)

StartResponse = Callable[..., Any]

# A signed request is accepted up to five minutes either side of its timestamp
# (docs.slack.dev "Verifying requests from Slack"; slack_sdk's SignatureVerifier).
REPLAY_WINDOW_SECONDS = 300
REMEMBERED_SIGNATURES = 50_000


class Refused(Exception):
    """A request turned away before Bolt sees it; the reason is logged, never echoed in detail."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class RecentSignatures:
    """Signatures of requests accepted in the last five minutes, so a replay is refused.

    Per process: several replicas each keep their own, so a replay sent to another replica
    inside the window is not caught. Bounded: past `limit` the oldest are forgotten first.
    Slack's own retries (X-Slack-Retry-Num) are new requests with a new timestamp and hence a
    new signature (a retry five minutes later could not pass the timestamp check otherwise),
    so refusing an exact (timestamp, signature) repeat never refuses a genuine retry.
    """

    def __init__(
        self,
        window: float = REPLAY_WINDOW_SECONDS,
        limit: int = REMEMBERED_SIGNATURES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.window = window
        self.limit = limit
        self.clock = clock
        self._expiry: OrderedDict[tuple[int, str], float] = OrderedDict()
        self._lock = threading.Lock()

    def first_sighting(self, timestamp: int, signature: str) -> bool:
        """Remember the request; return False if it was seen inside the window already."""
        key = (timestamp, signature)
        with self._lock:
            now = self.clock()
            while self._expiry and next(iter(self._expiry.values())) < now:
                self._expiry.popitem(last=False)
            if key in self._expiry:
                return False
            # The signature stops being valid `window` seconds after its own timestamp.
            self._expiry[key] = timestamp + self.window + 1
            if len(self._expiry) > self.limit:
                self._expiry.popitem(last=False)
            return True


class SlackEndpoint:
    """`POST /slack/events`: size, signature and replay checks before Bolt reads a byte of JSON.

    Bolt's own adapter reads the whole body and parses it before checking the signature, so an
    unsigned 150 MB POST costs hundreds of MB and a malformed one a 500 with a traceback.
    """

    def __init__(
        self,
        app: App,
        *,
        signing_secret: str,
        max_body_bytes: int,
        seen: RecentSignatures | None = None,
    ) -> None:
        self.app = app
        self.verifier = SignatureVerifier(signing_secret)
        self.max_body_bytes = max_body_bytes
        self.seen = seen or RecentSignatures()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        try:
            request = self._admit(environ)
        except Refused as refusal:
            log.warning(
                "refused a request to /slack/events from %s: %s (HTTP %d)",
                environ.get("REMOTE_ADDR", "?"),
                refusal.reason,
                refusal.status,
            )
            return _plain(start_response, refusal.status)
        try:
            answer = self.app.dispatch(request)
        except Exception:  # Bolt answers listener errors itself; this is Bolt failing
            log.exception(
                "Slack request failed outside any listener (reference %s)", new_reference()
            )
            return _plain(start_response, 500)
        response = WsgiHttpResponse(status=answer.status, headers=answer.headers, body=answer.body)
        start_response(response.status, response.get_headers())
        return response.get_body()

    def _admit(self, environ: dict[str, Any]) -> BoltRequest:
        """Return the parsed request, or raise Refused (checks in order of cost)."""
        if environ.get("REQUEST_METHOD") != "POST":
            raise Refused(405, "not a POST")
        raw = self._read_body(environ)
        timestamp = environ.get("HTTP_X_SLACK_REQUEST_TIMESTAMP")
        signature = environ.get("HTTP_X_SLACK_SIGNATURE")
        if not timestamp or not signature:
            raise Refused(401, "no Slack signature")
        if not timestamp.isascii() or not timestamp.isdigit():
            raise Refused(400, "the timestamp is not a number")
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(400, "the body is not UTF-8") from None
        if not self.verifier.is_valid(body=body, timestamp=timestamp, signature=signature):
            raise Refused(401, "bad signature or a timestamp more than 5 minutes off")
        if not self.seen.first_sighting(int(timestamp), signature):
            raise Refused(409, "a replay of a request already received")
        headers = WsgiHttpRequest(environ).get_headers()
        try:
            request = BoltRequest(body=body, query=environ.get("QUERY_STRING", ""), headers=headers)
        except Exception as exc:  # a malformed payload is the sender's fault: no traceback
            raise Refused(400, f"malformed payload ({type(exc).__name__})") from None
        if not isinstance(request.body, dict):
            raise Refused(400, "the payload is not an object")
        return request

    def _read_body(self, environ: dict[str, Any]) -> bytes:
        """Read at most max_body_bytes; refuse a longer body without reading it."""
        stream = environ["wsgi.input"]
        length_header = environ.get("CONTENT_LENGTH") or ""
        if not length_header:
            # Without a length only a server that ends the input itself (chunked decoded) may be
            # read to the end; wsgiref hands over the raw socket, so Slack's Content-Length is
            # required there. Either way nothing past the cap is read.
            if environ.get("HTTP_TRANSFER_ENCODING") and not environ.get("wsgi.input_terminated"):
                raise Refused(411, "a body without Content-Length")
            if not environ.get("wsgi.input_terminated"):
                return b""
            data = _read_up_to(stream, self.max_body_bytes + 1)
            if len(data) > self.max_body_bytes:
                raise Refused(413, f"a body over {self.max_body_bytes} bytes")
            return data
        if not length_header.isdigit():
            raise Refused(400, "Content-Length is not a number")
        length = int(length_header)
        if length > self.max_body_bytes:
            raise Refused(413, f"a body of {length} bytes (over {self.max_body_bytes})")
        try:
            data = _read_up_to(stream, length)
        except OSError as exc:  # a client that stalls mid-body (socket timeout) or hangs up
            raise Refused(408, f"the body was not received ({type(exc).__name__})") from None
        if len(data) < length:
            raise Refused(400, "the body is shorter than its Content-Length")
        return data


def _read_up_to(stream: Any, limit: int) -> bytes:
    """Read until `limit` bytes or the end of the input."""
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = stream.read(min(remaining, 64 * 1024))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _plain(start_response: StartResponse, status: int) -> Iterable[bytes]:
    """Answer with the status's own phrase only (no detail for a caller we do not trust)."""
    phrase = WsgiHttpResponse(status=status).status.partition(" ")[2]
    headers: dict[str, Sequence[str]] = {"content-type": ["text/plain;charset=utf-8"]}
    response = WsgiHttpResponse(status=status, headers=headers, body=phrase)
    start_response(response.status, response.get_headers())
    return response.get_body()


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    """One thread per request, so a slow request never delays another user's ack."""

    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    # A client that stalls mid-request frees its thread after this many seconds.
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http %s", format % args)


def build_wsgi_app(app: App, services: AppServices) -> Callable[..., Any]:
    """Route /slack/events (checked, then Bolt) and /healthz (database check, outbox backlog)."""
    settings = services.settings
    secret = settings.slack_signing_secret
    if secret is None:
        raise ValueError("SLACK_SIGNING_SECRET is not set")
    slack = SlackEndpoint(
        app, signing_secret=secret.get_secret_value(), max_body_bytes=settings.max_body_bytes
    )

    def wsgi(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/healthz" and environ.get("REQUEST_METHOD") == "GET":
            return _health(services.session_factory, start_response)
        if path == "/slack/events":
            return slack(environ, start_response)
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found"]

    return wsgi


def _health(factory: sessionmaker[Session], start_response: StartResponse) -> Iterable[bytes]:
    try:
        with factory() as session:
            session.execute(text("SELECT 1"))
            body: dict[str, Any] = {"status": "ok", "database": "ok"}
            # wall-clock time: monitoring asks how long messages have really waited
            body.update(health_snapshot(session, dt.datetime.now(dt.UTC)))
        status = "200 OK"
    except Exception as exc:
        log.warning("health check failed: %s", type(exc).__name__)
        status, body = "503 Service Unavailable", {"status": "error", "database": "unreachable"}
    start_response(status, [("Content-Type", "application/json")])
    return [json.dumps(body).encode()]


def make_http_server(app: App, services: AppServices, host: str, port: int) -> WSGIServer:
    """Create (not start) the threaded HTTP server; port 0 picks a free port."""
    return make_server(
        host,
        port,
        build_wsgi_app(app, services),
        server_class=ThreadingWSGIServer,
        handler_class=QuietHandler,
    )


def serve_in_thread(server: WSGIServer) -> threading.Thread:
    """Run a server in a daemon thread (tests, and serve's HTTP mode beside the scheduler)."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    return thread
