"""A local fake of the Slack Web API that records every call (and can fail on purpose)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs


def dm_channel(channel: str) -> str:
    """Return the DM conversation ID Slack uses for a user ID (other IDs unchanged)."""
    return f"D{channel[1:]}" if channel[:1] in ("U", "W") else channel


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    headers: dict[str, str]
    body: bytes = b""
    at: float = field(default_factory=time.monotonic)


@dataclass
class Fault:
    status: int
    remaining: int
    retry_after: int | None = None
    error: str | None = None  # an ok:false API error instead of an HTTP error


def _flag(value: Any) -> bool:
    return value in (True, 1, "1", "true", "True")


def _page(items: list[dict[str, Any]], params: dict[str, Any], page_size: int) -> dict[str, Any]:
    """Return one page of a cursor-paginated listing: at most `limit`, at most `page_size`."""
    start = int(str(params.get("cursor") or "page:0").partition(":")[2] or 0)
    size = max(1, min(int(params.get("limit") or 100), page_size))
    chunk, more = items[start : start + size], start + size < len(items)
    if not _flag(params.get("include_all_metadata")):
        chunk = [{k: v for k, v in m.items() if k != "metadata"} for m in chunk]
    cursor = f"page:{start + size}" if more else ""
    return {
        "ok": True,
        "messages": chunk,
        "has_more": more,
        "response_metadata": {"next_cursor": cursor},
    }


def _in_window(ts: str, params: dict[str, Any]) -> bool:
    inclusive = _flag(params.get("inclusive"))
    oldest, latest = params.get("oldest"), params.get("latest")
    if oldest and not (float(ts) >= float(oldest) if inclusive else float(ts) > float(oldest)):
        return False
    return not latest or (float(ts) <= float(latest) if inclusive else float(ts) < float(latest))


class FakeSlack:
    """Serve the subset of the Web API mlcost uses on 127.0.0.1 (port 0).

    As Slack documents: conversations.history lists only parent messages (and replies posted
    with reply_broadcast), newest first; conversations.replies(channel, ts) lists the parent and
    its replies, oldest first. Both return at most `limit` messages, and here never more than
    `page_size`, so callers must follow response_metadata.next_cursor. Message metadata is
    returned only with include_all_metadata. A channel in `non_member_channels` (a public
    channel the bot posts to through chat:write.public without joining) answers both with
    not_in_channel while chat.postMessage still works. Message ts are real epoch times.
    """

    def __init__(self, page_size: int = 3) -> None:
        self.calls: list[Call] = []
        self.faults: dict[str, Fault] = {}
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.page_size = page_size
        self.non_member_channels: set[str] = set()
        self._ts = int(time.time() * 1_000_000)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # notified after every answered call
        self.handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}
        self.delays: dict[str, float] = {}  # seconds to wait before answering (after acting)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                fake._handle(self, body)

            def do_GET(self) -> None:
                fake._handle(self, b"")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        # stop() waits up to one poll interval, and every Slack test starts and stops a fake
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.005}, daemon=True
        )

    def start(self) -> FakeSlack:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- test helpers -----------------------------------------------------------------

    def fail(
        self,
        method: str,
        status: int,
        times: int = 1,
        retry_after: int | None = None,
        error: str | None = None,
    ) -> None:
        """Make the next `times` calls of a method fail."""
        self.faults[method] = Fault(status, times, retry_after, error)

    def not_a_member(self, channel: str) -> None:
        """Make history and replies of a channel answer not_in_channel (posting still works)."""
        self.non_member_channels.add(channel)

    def calls_to(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, method: str, count: int = 1, timeout: float = 10.0) -> list[Call]:
        """Wait until a method has been called `count` times; return those calls."""
        found: list[Call] = []

        def enough() -> bool:
            found[:] = [c for c in self.calls if c.method == method]
            return len(found) >= count

        if not self.wait_until(enough, timeout):
            raise AssertionError(
                f"{method} called {len(self.calls_to(method))} times, wanted "
                f"{count}; calls: {self.methods()}"
            )
        return list(found)

    def wait_until(self, check: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Wait until `check()` holds, re-checking after each answered call; return whether it did.

        `check` runs under the fake's lock, so it must not call the fake's locking helpers.
        """
        with self._changed:
            return self._changed.wait_for(check, timeout)

    def methods(self) -> list[str]:
        with self._lock:
            return [c.method for c in self.calls]

    # --- the server -------------------------------------------------------------------

    def _next_ts(self) -> str:
        with self._lock:
            self._ts = max(self._ts + 1, int(time.time() * 1_000_000))
            return f"{self._ts // 1_000_000}.{self._ts % 1_000_000:06d}"

    def _handle(self, request: BaseHTTPRequestHandler, body: bytes) -> None:
        path, _, query = request.path.lstrip("/").partition("?")
        content_type = request.headers.get("Content-Type", "")
        params: dict[str, Any] = {k: v[0] for k, v in parse_qs(query).items()}
        if path.startswith("upload/"):
            params = {"bytes": len(body)}
        elif "json" in content_type and body:
            params.update(json.loads(body))
        elif body:
            params.update({k: v[0] for k, v in parse_qs(body.decode()).items()})
        for key in ("blocks", "files", "metadata", "view"):
            if isinstance(params.get(key), str):
                with contextlib.suppress(json.JSONDecodeError):
                    params[key] = json.loads(params[key])
        call = Call(
            path, params, dict(request.headers), body if path.startswith("upload/") else b""
        )
        with self._lock:
            self.calls.append(call)
            fault = self.faults.get(path)
            if fault and fault.remaining > 0:
                fault.remaining -= 1
            else:
                fault = None
        if fault is not None:
            with self._changed:
                self._changed.notify_all()
            if fault.error:
                self._send(request, 200, {"ok": False, "error": fault.error})
            else:
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after else {}
                self._send(request, fault.status, {"ok": False, "error": "fake_failure"}, headers)
            return
        response = self._respond(path, params)
        with self._changed:
            self._changed.notify_all()
        if self.delays.get(path):
            time.sleep(self.delays[path])
        self._send(request, 200, response)

    def _respond(self, method: str, params: dict[str, Any]) -> Any:
        if method in self.handlers:
            return self.handlers[method](params)
        return self.respond_default(method, params)

    def respond_default(self, method: str, params: dict[str, Any]) -> Any:
        """Answer a call as the fake does without a handler (for handlers that wrap it)."""
        if method == "auth.test":
            return {"ok": True, "user_id": "UBOT", "team_id": "T1", "bot_id": "B1"}
        if method == "chat.postMessage":
            ts = self._next_ts()
            channel = dm_channel(params.get("channel", ""))  # a user ID posts to the app's DM
            message = {
                "ts": ts,
                "text": params.get("text"),
                "blocks": params.get("blocks"),
                "thread_ts": params.get("thread_ts"),
                "metadata": params.get("metadata"),
            }
            if params.get("thread_ts") and _flag(params.get("reply_broadcast")):
                message["reply_broadcast"] = True
            self.messages[(channel, ts)] = message
            return {"ok": True, "channel": channel, "ts": ts, "message": message}
        if method == "chat.update":
            key = (params.get("channel", ""), params.get("ts", ""))
            self.messages.setdefault(key, {}).update(
                {"text": params.get("text"), "blocks": params.get("blocks")}
            )
            return {"ok": True, "channel": key[0], "ts": key[1]}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": self._next_ts()}
        if method == "conversations.open":
            return {"ok": True, "channel": {"id": dm_channel(params.get("users", ""))}}
        if method in ("conversations.history", "conversations.replies"):
            channel = params.get("channel", "")
            if channel[:1] in ("U", "W"):
                return {"ok": False, "error": "channel_not_found"}  # history wants the DM's ID
            if channel in self.non_member_channels:
                return {"ok": False, "error": "not_in_channel"}
            in_channel = sorted(
                (dict(m, ts=ts) for (c, ts), m in list(self.messages.items()) if c == channel),
                key=lambda m: float(m["ts"]),
            )
            if method == "conversations.history":
                listed = [
                    m
                    for m in in_channel
                    if _in_window(m["ts"], params)
                    and (m.get("thread_ts") in (None, m["ts"]) or m.get("reply_broadcast"))
                ]
                return _page(listed[::-1], params, self.page_size)
            parent = next((m for m in in_channel if m["ts"] == params.get("ts")), None)
            if parent is None:
                return {"ok": False, "error": "thread_not_found"}
            replies = [
                m
                for m in in_channel
                if m.get("thread_ts") == parent["ts"]
                and m["ts"] != parent["ts"]
                and _in_window(m["ts"], params)
            ]
            return _page([parent, *replies], params, self.page_size)
        if method == "files.getUploadURLExternal":
            return {"ok": True, "upload_url": f"{self.url}upload/F123", "file_id": "F123"}
        if method.startswith("upload/"):
            return "OK"
        if method == "files.completeUploadExternal":
            return {"ok": True, "files": [{"id": "F123", "title": "chart"}]}
        if method in ("views.publish", "views.open", "views.update"):
            return {"ok": True, "view": {"id": "V1"}}
        if method.startswith("respond/"):
            return "ok"
        return {"ok": True}

    def _send(
        self,
        request: BaseHTTPRequestHandler,
        status: int,
        payload: Any,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        request.send_response(status)
        request.send_header(
            "Content-Type", "application/json" if not isinstance(payload, str) else "text/plain"
        )
        for key, value in (headers or {}).items():
            request.send_header(key, value)
        request.send_header("Content-Length", str(len(data)))
        # a client that gave up waiting (the timeout tests) has closed its end: not an error here
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            request.end_headers()
            request.wfile.write(data)
