"""A fault-injecting proxy in front of the fake Slack Web API, and the transcript it saw.

The serve processes talk to this proxy (SLACK_API_URL); it forwards to the fake Web API, which
keeps Slack's state. On the methods a delivery depends on it injects, at random from a seed:

- `429` with `Retry-After: 1`: Slack refused, nothing happened;
- `500`: nothing happened (the client cannot know that);
- `timeout`: the call IS forwarded and acted on, but the answer is held until the client has
  given up, so the caller sees a timeout for a post that is in the channel.

A channel in `dead_channels` answers `channel_not_found`, as Slack does for a deleted channel.
A method in `slow` waits that many seconds before it is forwarded: Slack is slow and has not
acted yet (a post is not in the channel's history until the wait is over).
Every post the fake accepted is kept in `posted`, with its outbox key: the transcript.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

FAULTED_METHODS = frozenset(
    {"chat.postMessage", "chat.update", "conversations.history", "conversations.replies"}
)
CHANNEL_METHODS = FAULTED_METHODS


@dataclass
class FaultPlan:
    """How often each fault happens; after `hard_until` (monotonic) only 429s are injected.

    The outbox backs a 500 or a timeout off for a minute or more; stopping those faults after a
    while lets every message settle in a CI-sized run while 429s go on to the end.
    """

    seed: int
    rate_limited: float = 0.12
    server_error: float = 0.07
    timeout: float = 0.07
    hard_until: float = float("inf")


@dataclass(frozen=True)
class PostedMessage:
    """A chat.postMessage the fake accepted: it is in the channel, whatever the caller saw."""

    key: str | None
    channel: str
    ts: str
    thread_ts: str | None
    answer_lost: bool  # the caller timed out: it cannot know this was posted


@dataclass
class ChaosSlack:
    """Serve the proxy on 127.0.0.1 (port 0) in a thread."""

    upstream: str
    plan: FaultPlan
    client_timeout: float
    dead_channels: frozenset[str] = frozenset()
    posted: list[PostedMessage] = field(default_factory=list)
    injected: Counter[tuple[str, str]] = field(default_factory=Counter)
    forced_started: threading.Event = field(default_factory=threading.Event)
    slow: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.plan.seed)
        self._lock = threading.Lock()
        self._forced: list[tuple[str, str]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                proxy._handle(self, self.rfile.read(length))

            def do_GET(self) -> None:
                proxy._handle(self, b"")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def start(self) -> ChaosSlack:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def force(self, method: str, fault: str) -> None:
        """Inject `fault` on the next call of `method` (before any random fault)."""
        with self._lock:
            self.forced_started.clear()
            self._forced.append((method, fault))

    def keys_posted(self) -> Counter[str | None]:
        with self._lock:
            return Counter(p.key for p in self.posted)

    # --- the proxy --------------------------------------------------------------------

    def _pick(self, method: str) -> tuple[str | None, bool]:
        with self._lock:
            for index, (forced_method, fault) in enumerate(self._forced):
                if forced_method == method:
                    del self._forced[index]
                    self.injected[(method, fault)] += 1
                    return fault, True
            if method not in FAULTED_METHODS:
                return None, False
            roll = self._rng.random()
            hard = time.monotonic() < self.plan.hard_until
            plan, fault = self.plan, None
            if roll < plan.rate_limited:
                fault = "429"
            elif hard and roll < plan.rate_limited + plan.server_error:
                fault = "500"
            elif hard and roll < plan.rate_limited + plan.server_error + plan.timeout:
                fault = "timeout"
            if fault:
                self.injected[(method, fault)] += 1
            return fault, False

    def _handle(self, request: BaseHTTPRequestHandler, body: bytes) -> None:
        method = request.path.lstrip("/").split("?")[0]
        params = _params(request, body)
        if method in CHANNEL_METHODS and params.get("channel") in self.dead_channels:
            self._send(request, 200, {"ok": False, "error": "channel_not_found"})
            return
        fault, forced = self._pick(method)
        if fault == "429":
            self._send(request, 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"})
            return
        if fault == "500":
            self._send(request, 500, {"ok": False, "error": "internal_error"})
            return
        if fault == "timeout" and forced:
            self.forced_started.set()
        if self.slow.get(method):
            time.sleep(self.slow[method])
        status, headers, data = self._forward(request, method, body)
        if method == "chat.postMessage" and status == 200:
            self._record_post(params, data, answer_lost=fault == "timeout")
        if fault == "timeout":
            # Slack acted; the answer arrives after the caller gave up (and closed the socket)
            time.sleep(self.client_timeout + 0.5)
        with contextlib.suppress(OSError):
            self._send_raw(request, status, headers, data)

    def _forward(
        self, request: BaseHTTPRequestHandler, method: str, body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        headers = {
            k: v
            for k, v in request.headers.items()
            if k.lower() in ("content-type", "authorization")
        }
        upstream = urllib.request.Request(
            self.upstream + request.path.lstrip("/"),
            data=body or None,
            headers=headers,
            method=request.command,
        )
        try:
            with urllib.request.urlopen(upstream, timeout=30) as response:
                return response.status, dict(response.headers.items()), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers.items()), exc.read()

    def _record_post(self, params: dict[str, Any], data: bytes, *, answer_lost: bool) -> None:
        try:
            answer = json.loads(data)
        except ValueError:
            return
        if not answer.get("ok"):
            return
        metadata = params.get("metadata") or {}
        key = (metadata.get("event_payload") or {}).get("key") if metadata else None
        thread_ts = params.get("thread_ts") or None
        message = PostedMessage(
            key, str(answer.get("channel")), str(answer.get("ts")), thread_ts, answer_lost
        )
        with self._lock:
            self.posted.append(message)

    def _send(
        self,
        request: BaseHTTPRequestHandler,
        status: int,
        payload: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        with contextlib.suppress(OSError):
            self._send_raw(request, status, all_headers, json.dumps(payload).encode())

    @staticmethod
    def _send_raw(
        request: BaseHTTPRequestHandler, status: int, headers: dict[str, str], data: bytes
    ) -> None:
        request.send_response(status)
        for key, value in headers.items():
            if key.lower() in ("content-type", "retry-after"):
                request.send_header(key, value)
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)


def _params(request: BaseHTTPRequestHandler, body: bytes) -> dict[str, Any]:
    """Decode a Web API call's arguments (query string, JSON or form), JSON fields parsed."""
    params: dict[str, Any] = {k: v[0] for k, v in parse_qs(urlsplit(request.path).query).items()}
    if body and "json" in request.headers.get("Content-Type", ""):
        try:
            decoded = json.loads(body)
        except ValueError:
            decoded = {}
        params.update(decoded if isinstance(decoded, dict) else {})
    elif body:
        params.update({k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()})
    if isinstance(params.get("metadata"), str):
        with contextlib.suppress(ValueError):
            params["metadata"] = json.loads(params["metadata"])
    return params
