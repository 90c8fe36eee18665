"""OpenCost through HTTP_PROXY / HTTPS_PROXY, and past them for NO_PROXY hosts.

A fake proxy on 127.0.0.1 answers absolute-URI GETs itself (for http) and refuses CONNECT (for
https, so no TLS is needed): it records what it was sent. OpenCost's host is under `.invalid`,
which never resolves, so an answer proves the proxy was used.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.engine import session_scope
from bot.errors import IngestError
from bot.ingest.ledger import ingest
from bot.ingest.sources.opencost import OpenCostSource
from bot.notify.sources import configured_sources
from bot.poll.cycle import fetch_sources
from bot.poll.plan import CycleReport
from bot.web.health import health_snapshot
from tests.integration.test_ingest_opencost import K8S_REGISTRY, cluster_days
from tests.integration.test_opencost_hostile import BASIC, WINDOW, json_answer, server
from tests.support.database import migrated
from tests.support.ledger import ledger_totals
from tests.support.opencost import serving
from tests.support.sample_registry import load_registry

PROXY_BASIC = "Basic " + base64.b64encode(b"puser:pr0xy-pa55").decode()
UPSTREAM = "opencost.invalid:9003"


class Asked:
    """What the fake proxy was sent: (method, target, headers) per request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []


@contextmanager
def proxy(*, silent: bool = False) -> Iterator[tuple[str, Asked]]:
    """Serve a fake forward proxy on 127.0.0.1 port 0; yield its address (host:port)."""
    asked = Asked()
    stopping = threading.Event()
    answer = json_answer(cluster_days())

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.requests.append(("GET", self.path, dict(self.headers.items())))
            if silent:
                stopping.wait(30)
                return
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                answer(self)

        def do_CONNECT(self) -> None:
            asked.requests.append(("CONNECT", self.path, dict(self.headers.items())))
            self.send_response(403, "Forbidden by the test proxy")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    with serving(Handler, stopping) as port:
        yield f"127.0.0.1:{port}", asked


def closed_port() -> int:
    """Return a port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_http_goes_through_http_proxy_with_the_proxy_credentials_only(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_registry(session, K8S_REGISTRY)
    with proxy() as (address, asked):
        monkeypatch.setenv("HTTP_PROXY", f"http://puser:pr0xy-pa55@{address}")
        report = ingest(OpenCostSource(f"http://{UPSTREAM}", window=WINDOW), session=session)
    assert report.reconciled and report.rows_written
    [(method, target, headers)] = asked.requests
    assert method == "GET"
    assert target.startswith(f"http://{UPSTREAM}/allocation?")  # the absolute URI
    assert headers["Proxy-Authorization"] == PROXY_BASIC
    assert "Authorization" not in headers


def test_no_proxy_hosts_are_reached_directly(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_registry(session, K8S_REGISTRY)
    with proxy() as (address, asked), server(json_answer(cluster_days())) as (url, seen):
        monkeypatch.setenv("http_proxy", f"http://{address}")
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        report = ingest(OpenCostSource(url, window=WINDOW), session=session)
    assert report.reconciled
    assert asked.requests == []
    assert len(seen.requests) == 1


def test_https_tunnels_through_https_proxy_and_the_proxy_never_sees_opencost_credentials(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = ledger_totals(session)
    with proxy() as (address, asked):
        monkeypatch.setenv("HTTPS_PROXY", f"http://puser:pr0xy-pa55@{address}")
        source = OpenCostSource(
            "https://reader:s3cr3t-pa55word@opencost.invalid:9443", window=WINDOW
        )
        with pytest.raises(IngestError) as error:
            ingest(source, session=session)
    [(method, target, headers)] = asked.requests
    assert (method, target) == ("CONNECT", "opencost.invalid:9443")
    assert headers["Proxy-Authorization"] == PROXY_BASIC
    assert "Authorization" not in headers and BASIC not in str(headers)
    message = str(error.value)
    assert "403" in message and f"http://puser:***@{address}" in message
    assert "pr0xy-pa55" not in message and "s3cr3t-pa55word" not in message
    assert ledger_totals(session) == before


def test_opencost_credentials_are_not_sent_in_clear_through_a_proxy(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    with proxy() as (address, asked):
        monkeypatch.setenv("HTTP_PROXY", f"http://{address}")
        source = OpenCostSource(f"http://reader:s3cr3t-pa55word@{UPSTREAM}", window=WINDOW)
        with pytest.raises(IngestError) as error:
            ingest(source, session=session)
    assert asked.requests == []
    message = str(error.value)
    assert "HTTP_PROXY" in message and "https" in message and "NO_PROXY" in message
    assert "s3cr3t-pa55word" not in message


def test_a_redirect_through_the_proxy_stays_within_the_origin(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked_paths: list[str] = []

    class Redirecting(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked_paths.append(self.path)
            self.send_response(302)
            self.send_header("Location", "http://elsewhere.invalid/allocation")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{httpd.server_address[1]}")
        with pytest.raises(IngestError, match="another origin"):
            ingest(OpenCostSource(f"http://{UPSTREAM}", window=WINDOW), session=session)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
    assert len(asked_paths) == 1


def test_a_silent_proxy_is_cut_at_the_fetch_deadline(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    with proxy(silent=True) as (address, _asked):
        monkeypatch.setenv("HTTP_PROXY", f"http://{address}")
        with pytest.raises(IngestError, match=r"no complete answer within 0\.5 s"):
            ingest(
                OpenCostSource(f"http://{UPSTREAM}", window=WINDOW, timeout=0.5), session=session
            )


def test_an_unreachable_proxy_is_named_with_its_password_masked_everywhere(
    database_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    proxy_url = f"http://puser:pr0xy-pa55@127.0.0.1:{closed_port()}"
    monkeypatch.setenv("HTTP_PROXY", proxy_url)
    settings = Settings(
        database_url=database_url, poll_sources=f"opencost:http://{UPSTREAM}", poll_lookback_days=3
    )
    [polled] = configured_sources(settings, dt.date(2026, 11, 6), model_tag_key="ml:model")
    failed = CycleReport(as_of=dt.date(2026, 11, 5))
    with migrated(database_url) as (_engine, factory):
        with caplog.at_level(logging.INFO):
            fetch_sources(factory, [polled], failed)
        with session_scope(factory) as session:
            health = health_snapshot(session, dt.datetime(2026, 11, 6, tzinfo=dt.UTC))
    [error] = failed.fetch_errors
    assert "proxy" in error and proxy_url.replace("pr0xy-pa55", "***") in error
    [failure] = health["source_failures"]
    for text in (error, str(health), caplog.text):
        assert "pr0xy-pa55" not in text, text
    assert "puser:***@" in failure["message"]


def test_a_proxy_mlcost_cannot_speak_to_is_refused_by_name(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://puser:pr0xy-pa55@127.0.0.1:1080")
    with pytest.raises(IngestError) as error:
        ingest(OpenCostSource("https://opencost.invalid", window=WINDOW), session=session)
    message = str(error.value)
    assert "HTTPS_PROXY" in message and "socks5" in message and "NO_PROXY" in message
    assert "pr0xy-pa55" not in message
