"""The HTTP server itself (waitress behind HttpServer): slow clients, idle connections, closing."""

from __future__ import annotations

import socket
import threading
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.web.server import (
    CONNECTION_LIMIT,
    GRACE_SECONDS,
    HTTP_THREADS,
    IDLE_TIMEOUT_SECONDS,
    HttpServer,
)

DEPLOY_DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"


class Gate:
    """A WSGI app whose /wait requests block until released; anything else answers at once."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        if environ["PATH_INFO"] == "/wait":
            self.entered.set()
            assert self.release.wait(10)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"answered " + environ["PATH_INFO"].encode()]


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def server(gate: Gate) -> Iterator[HttpServer]:
    served = HttpServer(gate, "127.0.0.1", 0, max_body_bytes=1000, idle_timeout=1)
    served.start()
    yield served
    gate.release.set()
    served.close()


def get(server: HttpServer, path: str) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=10) as answer:
        return bytes(answer.read())


def stalled(server: HttpServer) -> socket.socket:
    """Open a connection that sends half a request line and then nothing."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\n")
    return sock


def test_slow_clients_hold_no_thread_and_are_closed_when_idle(server: HttpServer) -> None:
    # many more stalled clients than worker threads: each holds a socket, no thread
    slow = [stalled(server) for _ in range(HTTP_THREADS * 5)]
    try:
        assert get(server, "/healthz") == b"answered /healthz"
        for sock in slow:  # closed after the idle timeout (1 s here, 30 s in serve)
            assert sock.recv(100) == b""
    finally:
        for sock in slow:
            sock.close()


def test_close_answers_the_request_under_way_then_refuses_new_connections(
    server: HttpServer, gate: Gate
) -> None:
    answers: list[bytes] = []
    client = threading.Thread(target=lambda: answers.append(get(server, "/wait")))
    client.start()
    assert gate.entered.wait(10)
    closing = threading.Thread(target=server.close)
    closing.start()
    gate.release.set()
    closing.join(20)
    client.join(20)
    assert answers == [b"answered /wait"]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=5).close()
    server.close()  # twice is harmless


def test_a_port_in_use_is_refused_when_the_server_is_made(server: HttpServer, gate: Gate) -> None:
    with pytest.raises(OSError):
        HttpServer(gate, "127.0.0.1", server.port, max_body_bytes=1000)


def test_a_server_never_started_closes_cleanly(gate: Gate) -> None:
    unused = HttpServer(gate, "127.0.0.1", 0, max_body_bytes=1000)
    unused.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", unused.port), timeout=5).close()


def test_the_deployment_doc_states_the_servers_limits() -> None:
    text = " ".join(DEPLOY_DOC.read_text().split())
    assert "runs the app on [waitress]" in text
    assert f"HTTP/1.1 with keep-alive, {HTTP_THREADS} threads" in text
    assert f"sends nothing for {IDLE_TIMEOUT_SECONDS} seconds is closed" in text
    assert f"up to {CONNECTION_LIMIT:,} connections" in text
    assert f"(up to {GRACE_SECONDS:g} seconds)" in text
