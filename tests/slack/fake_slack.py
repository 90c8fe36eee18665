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


class FakeSlack:
    """Serve the subset of the Web API mlcost uses on 127.0.0.1 (port 0)."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.faults: dict[str, Fault] = {}
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self._ts = 1_700_000_000
        self._lock = threading.Lock()
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
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)  # fmt: skip

    def start(self) -> FakeSlack:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- test helpers -----------------------------------------------------------------

    def fail(self, method: str, status: int, times: int = 1, retry_after: int | None = None,
             error: str | None = None) -> None:  # fmt: skip
        """Make the next `times` calls of a method fail."""
        self.faults[method] = Fault(status, times, retry_after, error)

    def calls_to(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, method: str, count: int = 1, timeout: float = 10.0) -> list[Call]:
        """Wait until a method has been called `count` times; return those calls."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.calls_to(method)
            if len(found) >= count:
                return found
            time.sleep(0.01)
        raise AssertionError(f"{method} called {len(self.calls_to(method))} times, wanted "
                             f"{count}; calls: {[c.method for c in self.calls]}")  # fmt: skip

    def methods(self) -> list[str]:
        with self._lock:
            return [c.method for c in self.calls]

    # --- the server -------------------------------------------------------------------

    def _next_ts(self) -> str:
        with self._lock:
            self._ts += 1
            return f"{self._ts}.000100"

    def _handle(self, request: BaseHTTPRequestHandler, body: bytes) -> None:
        path = request.path.lstrip("/").split("?")[0]
        content_type = request.headers.get("Content-Type", "")
        params: dict[str, Any] = {}
        if path.startswith("upload/"):
            params = {"bytes": len(body)}
        elif "json" in content_type and body:
            params = json.loads(body)
        elif body:
            params = {k: v[0] for k, v in parse_qs(body.decode()).items()}
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
            if fault.error:
                self._send(request, 200, {"ok": False, "error": fault.error})
            else:
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after else {}
                self._send(request, fault.status, {"ok": False, "error": "fake_failure"}, headers)
            return
        response = self._respond(path, params)
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
        if method == "conversations.history":
            channel = params.get("channel", "")
            if channel[:1] in ("U", "W"):
                return {"ok": False, "error": "channel_not_found"}  # history wants the DM's ID
            found = [dict(m) for (c, _), m in self.messages.items() if c == channel]
            return {"ok": True, "messages": found, "has_more": False}
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

    def _send(self, request: BaseHTTPRequestHandler, status: int, payload: Any,
              headers: dict[str, str] | None = None) -> None:  # fmt: skip
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        request.send_response(status)
        request.send_header(
            "Content-Type", "application/json" if not isinstance(payload, str) else "text/plain"
        )
        for key, value in (headers or {}).items():
            request.send_header(key, value)
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)
