"""Serve the Bolt app over HTTP on waitress: /slack/events (checked, then Bolt) and /healthz."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import resource
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import waitress
import waitress.channel
import waitress.server
import waitress.trigger
from slack_bolt import App, BoltRequest, BoltResponse
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_bolt.adapter.wsgi.http_request import WsgiHttpRequest
from slack_bolt.adapter.wsgi.http_response import WsgiHttpResponse
from slack_sdk.signature import SignatureVerifier
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from bot.bootstrap import AppServices
from bot.errors import new_reference
from bot.interrupts import wait_interruptibly
from bot.web.health import health_snapshot

log = logging.getLogger(__name__)

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

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


class SlackRequestChecks:
    """WSGI middleware in front of Bolt: size, signature and replay checks before any JSON is read.

    Bolt's own adapter reads the whole body and parses it before checking the signature, so an
    unsigned 150 MB POST would cost hundreds of MB and a malformed one a 500 with a traceback.
    A request that passes reaches the wrapped app with exactly the bytes that were checked.
    """

    def __init__(
        self,
        inner: WsgiApp,
        *,
        signing_secret: str,
        max_body_bytes: int,
        seen: RecentSignatures | None = None,
    ) -> None:
        self.inner = inner
        self.verifier = SignatureVerifier(signing_secret)
        self.max_body_bytes = max_body_bytes
        self.seen = seen or RecentSignatures()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        try:
            raw = self._admit(environ)
        except Refused as refusal:
            log.warning(
                "refused a request to %s from %s: %s (HTTP %d)",
                environ.get("PATH_INFO", "?"),
                environ.get("REMOTE_ADDR", "?"),
                refusal.reason,
                refusal.status,
            )
            return _plain(start_response, refusal.status)
        checked = {**environ, "wsgi.input": io.BytesIO(raw), "CONTENT_LENGTH": str(len(raw))}
        return self.inner(checked, start_response)

    def _admit(self, environ: dict[str, Any]) -> bytes:
        """Return the checked body, or raise Refused (checks in order of cost)."""
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
        return raw

    def _read_body(self, environ: dict[str, Any]) -> bytes:
        """Read at most max_body_bytes; refuse a longer body without reading it."""
        stream = environ["wsgi.input"]
        length_header = environ.get("CONTENT_LENGTH") or ""
        if not length_header:
            # Without a length only a server that ends the input itself may be read to the end
            # (waitress does, and decodes a chunked body); from one that hands over the raw
            # socket a chunked body is refused. Either way nothing past the cap is read.
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


class SlackEvents(SlackRequestHandler):
    """Bolt's WSGI adapter, answering 500 (logged with a reference) if Bolt itself fails."""

    def dispatch(self, request: WsgiHttpRequest) -> BoltResponse:
        try:
            return super().dispatch(request)
        except Exception:  # Bolt answers listener errors itself; this is Bolt failing
            log.exception(
                "Slack request failed outside any listener (reference %s)", new_reference()
            )
            return BoltResponse(status=500, body=_phrase(500))


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


def _phrase(status: int) -> str:
    return WsgiHttpResponse(status=status).status.partition(" ")[2]


def _plain(start_response: StartResponse, status: int) -> Iterable[bytes]:
    """Answer with the status's own phrase only (no detail for a caller we do not trust)."""
    headers: dict[str, Sequence[str]] = {"content-type": ["text/plain;charset=utf-8"]}
    response = WsgiHttpResponse(status=status, headers=headers, body=_phrase(status))
    start_response(response.status, response.get_headers())
    return response.get_body()


def build_wsgi_app(app: App, services: AppServices) -> WsgiApp:
    """Route /slack/events (checked, then Bolt) and /healthz (database check, outbox backlog)."""
    settings = services.settings
    secret = settings.slack_signing_secret
    if secret is None:
        raise ValueError("SLACK_SIGNING_SECRET is not set")
    slack = SlackRequestChecks(
        SlackEvents(app),
        signing_secret=secret.get_secret_value(),
        max_body_bytes=settings.max_body_bytes,
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


# How waitress holds connections. It reads each request whole in one event loop before a worker
# thread sees it, so a slow client holds a socket, not a thread.
HTTP_THREADS = 8  # requests handled at once (acks are quick; Bolt's listeners run elsewhere)
IDLE_TIMEOUT_SECONDS = 30  # a connection that sends nothing this long is closed (slow clients)
CONNECTION_LIMIT = 4000  # past this many open connections, new ones wait in the backlog
GRACE_SECONDS = 5.0  # on close, how long requests under way may take to finish


class HttpServer:
    """waitress serving a WSGI app on one port: started in a thread, closed from another.

    The port is bound when this is created, so a port in use fails at once.
    """

    def __init__(
        self,
        wsgi: WsgiApp,
        host: str,
        port: int,
        *,
        max_body_bytes: int,
        idle_timeout: int = IDLE_TIMEOUT_SECONDS,
    ) -> None:
        _allow_open_files(CONNECTION_LIMIT + 256)
        self._map: dict[int, Any] = {}
        self._server = waitress.create_server(
            wsgi,
            map=self._map,
            host=host,
            port=port,
            threads=HTTP_THREADS,
            channel_timeout=idle_timeout,
            cleanup_interval=max(1, min(5, idle_timeout)),  # how often idle ones are looked for
            connection_limit=CONNECTION_LIMIT,
            # waitress answers 413 from Content-Length (or a chunked body's size) before
            # reading the body; it refuses a length >= its limit, so cap + 1
            max_request_body_size=max_body_bytes + 1,
            asyncore_use_poll=True,  # select() cannot watch sockets numbered past 1023
        )
        # waitress warns "Task queue depth is N" whenever a request waits for a busy thread: the
        # normal shape of a burst (Slack retries), nothing an operator can act on. Ours says it
        # at DEBUG; /healthz latency (docs/deploy.md) is the signal for a server that is too small.
        self._server.task_dispatcher.queue_logger = _QueueLog()
        listening = getattr(self._server, "effective_listen", None) or [
            (self._server.effective_host, self._server.effective_port)
        ]
        self.port = int(listening[0][1])
        self._wake = waitress.trigger.trigger(self._map)  # runs calls inside the loop's thread
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()

    def start(self) -> threading.Thread:
        """Serve in a daemon thread (tests, benchmarks; `serve()` for `mlcost serve`)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._server.run, name="http", daemon=True)
            self._thread.start()
        return self._thread

    def serve(self) -> None:
        """Serve until close(); a signal's exception (Ctrl-C, SIGTERM) is raised here."""
        self.start()
        wait_interruptibly(self._closed)

    def close(self) -> None:
        """Stop accepting, let requests under way answer (up to a few seconds), close it all."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._thread is None or not self._in_loop(self._stop_listening):
            self._close_here()  # never served (nothing under way), or the loop cannot be woken
            return
        # waits for the requests being handled; requests still queued are dropped (Slack retries)
        self._server.task_dispatcher.shutdown(timeout=GRACE_SECONDS)
        if self._in_loop(self._close_when_answered):
            deadline = time.monotonic() + GRACE_SECONDS
            while len(self._map) > 1 and time.monotonic() < deadline:  # only the trigger left
                time.sleep(0.01)
        if not self._in_loop(self._close_everything):
            self._close_here()
        self._thread.join(GRACE_SECONDS)

    def _in_loop(self, call: Callable[[], None]) -> bool:
        """Have the loop's thread run `call`; False when its wake-up pipe is closed already (a
        descriptor closed under it: seen once in the test suite as EBADF on close)."""
        try:
            self._wake.pull_trigger(call)
        except OSError as exc:
            log.warning("the HTTP loop could not be woken (%s): closing from here", exc.strerror)
            return False
        return True

    def _close_here(self) -> None:
        """Close every connection and the listening socket from this thread, then the workers."""
        for dispatcher in list(self._map.values()):
            dispatcher.close()
        self._server.task_dispatcher.shutdown()
        if self._thread is not None:
            self._thread.join(GRACE_SECONDS)

    def _stop_listening(self) -> None:
        for dispatcher in list(self._map.values()):
            if isinstance(dispatcher, waitress.server.BaseWSGIServer):
                dispatcher.close()

    def _close_when_answered(self) -> None:
        for dispatcher in list(self._map.values()):
            if isinstance(dispatcher, waitress.channel.HTTPChannel):
                dispatcher.close_when_flushed = True  # what waitress does after a last answer

    def _close_everything(self) -> None:
        for dispatcher in list(self._map.values()):
            dispatcher.close()


class _QueueLog:
    """Stands in for waitress's `queue_logger`: the queue depth at DEBUG, under bot.web."""

    def warning(self, message: str, *args: object) -> None:
        log.debug("requests queued for a worker thread: %s", message % args if args else message)


def _allow_open_files(wanted: int) -> None:
    """Raise this process's soft limit on open files towards `wanted` (up to the hard limit).

    Each connection is a file; systemd's default soft limit (1,024) would stop accepting below
    CONNECTION_LIMIT. Go programs raise it to the hard limit at start for the same reason.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def make_http_server(app: App, services: AppServices, host: str, port: int) -> HttpServer:
    """Create (bind, not start) the HTTP server; port 0 picks a free port."""
    return HttpServer(
        build_wsgi_app(app, services),
        host,
        port,
        max_body_bytes=services.settings.max_body_bytes,
    )
