"""OpenCost endpoints that redirect elsewhere, drip, answer too much, or carry URL secrets."""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.engine import session_scope
from bot.db.schema import IngestionRun
from bot.errors import IngestError
from bot.ingest.ledger import ingest
from bot.ingest.sources.opencost import OpenCostSource
from bot.notify.sources import configured_sources
from bot.poll.cycle import fetch_sources
from bot.poll.plan import CycleReport
from bot.web.health import health_snapshot
from tests.integration.test_ingest_opencost import K8S_REGISTRY, cluster_days
from tests.support.database import migrated
from tests.support.ledger import ledger_totals
from tests.support.opencost import serving
from tests.support.sample_registry import load_registry

WINDOW = "2026-11-03T00:00:00Z,2026-11-05T00:00:00Z"
BASIC = "Basic " + base64.b64encode(b"reader:s3cr3t-pa55word").decode()


class Seen:
    """What one fake server was asked: each path and its Authorization header (or None)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str | None]] = []


Respond = Callable[[BaseHTTPRequestHandler], None]


@contextmanager
def server(respond: Respond) -> Iterator[tuple[str, Seen]]:
    """Serve `respond` on 127.0.0.1 port 0; yield the base URL and what it saw."""
    seen = Seen()
    stopping = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.requests.append((self.path, self.headers.get("Authorization")))
            self.server_stopping = stopping  # type: ignore[attr-defined]
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                respond(self)  # the client may give up: what these tests want

        def log_message(self, format: str, *args: Any) -> None:
            return

    with serving(Handler, stopping) as port:
        yield f"http://127.0.0.1:{port}", seen


def json_answer(body: str) -> Respond:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        data = body.encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    return respond


def redirect_to(target: Callable[[], str], status: int = 302) -> Respond:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Location", target())
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return respond


def secured(url: str) -> str:
    return url.replace("http://", "http://reader:s3cr3t-pa55word@")


def test_a_redirect_to_another_origin_is_refused_and_the_other_host_never_sees_credentials(
    session: Session,
) -> None:
    load_registry(session, K8S_REGISTRY)
    before = ledger_totals(session)
    with (
        server(json_answer(cluster_days())) as (elsewhere, other),
        server(redirect_to(lambda: elsewhere + "/allocation?window=1d")) as (url, first),
        pytest.raises(IngestError) as error,
    ):
        ingest(OpenCostSource(secured(url), window=WINDOW), session=session)
    assert other.requests == []  # never asked, so never handed the Basic credentials
    assert first.requests[0][1] == BASIC
    message = str(error.value)
    assert "redirect" in message and "another origin" in message and elsewhere in message
    assert "s3cr3t" not in message
    assert ledger_totals(session) == before


def test_a_same_origin_redirect_is_followed_with_its_credentials_and_loops_are_cut(
    session: Session,
) -> None:
    load_registry(session, K8S_REGISTRY)
    answer = json_answer(cluster_days())

    def moved(handler: BaseHTTPRequestHandler) -> None:
        if handler.path.startswith("/opencost/allocation"):
            answer(handler)
        else:
            redirect_to(lambda: "/opencost" + handler.path, status=301)(handler)

    with server(moved) as (url, seen):
        report = ingest(OpenCostSource(secured(url), window=WINDOW), session=session)
    assert report.reconciled
    assert [auth for _path, auth in seen.requests] == [BASIC, BASIC]
    assert seen.requests[1][0].startswith("/opencost/allocation?")

    with (
        server(redirect_to(lambda: "/allocation?again=1")) as (url, seen),
        pytest.raises(IngestError, match="more than 5 redirects"),
    ):
        ingest(OpenCostSource(url, window=WINDOW), session=session)
    assert len(seen.requests) == 6  # the first and five redirects followed


def drip(handler: BaseHTTPRequestHandler) -> None:
    """Promise 40 bytes and send one every 0.25 s (until the test's server stops)."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "40")
    handler.end_headers()
    stopping: threading.Event = handler.server_stopping  # type: ignore[attr-defined]
    for _ in range(40):
        if stopping.wait(0.25):
            return
        handler.wfile.write(b" ")
        handler.wfile.flush()


def test_a_dripping_server_is_cut_at_the_fetch_deadline(session: Session) -> None:
    before = ledger_totals(session)
    with server(drip) as (url, _seen):
        source = OpenCostSource(url + "/?token=tok-0123456789", window=WINDOW, timeout=1)
        with pytest.raises(IngestError) as error:
            ingest(source, session=session)
    message = str(error.value)
    assert "no complete answer within 1 s" in message
    assert "MLCOST_OPENCOST_TIMEOUT_SECONDS" in message
    assert "tok-0123456789" not in message
    assert ledger_totals(session) == before


def test_a_server_silent_after_connecting_is_cut_at_the_fetch_deadline(session: Session) -> None:
    def silent(handler: BaseHTTPRequestHandler) -> None:
        handler.server_stopping.wait(30)  # type: ignore[attr-defined]

    with (
        server(silent) as (url, _seen),
        pytest.raises(IngestError, match=r"no complete answer within 0\.5 s"),
    ):
        ingest(OpenCostSource(url, window=WINDOW, timeout=0.5), session=session)


def oversized(declared: bool) -> Respond:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if declared:
            handler.send_header("Content-Length", str(50_000))
        else:
            handler.send_header("Connection", "close")  # the body ends when the socket closes
            handler.close_connection = True
        handler.end_headers()
        for _ in range(50):
            handler.wfile.write(b" " * 1000)

    return respond


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "counted"])
def test_an_answer_over_the_size_cap_is_refused(session: Session, declared: bool) -> None:
    before = ledger_totals(session)
    with server(oversized(declared)) as (url, _seen):
        source = OpenCostSource(url, window=WINDOW, max_bytes=10_000)
        with pytest.raises(IngestError) as error:
            ingest(source, session=session)
    message = str(error.value)
    assert "larger than 10,000 bytes" in message and "MLCOST_OPENCOST_MAX_BYTES" in message
    assert ledger_totals(session) == before


SECRETS = ("tok-0123456789", "sk-abcdef987654", "AmzSig0123456789", "s3cr3t-pa55word")
QUERY = (
    "?token=tok-0123456789&api_key=sk-abcdef987654&X-Amz-Signature=AmzSig0123456789"
    "&aggregate=namespace"
)


def test_credential_query_parameters_are_masked_wherever_the_url_is_shown(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with migrated(database_url) as (_engine, factory):
        with session_scope(factory) as session:
            load_registry(session, K8S_REGISTRY)
        with server(json_answer(cluster_days())) as (url, seen):
            location = secured(url) + "/allocation" + QUERY
            source = OpenCostSource(location, window=WINDOW)
            with session_scope(factory) as session:
                report = ingest(source, session=session)
            # the server is asked with the real values, in the header and the query
            [(path, auth)] = seen.requests
            assert auth == BASIC and "token=tok-0123456789" in path
            settings = Settings(
                database_url=database_url, poll_sources=f"opencost:{location}", poll_lookback_days=3
            )
            [polled] = configured_sources(settings, dt.date(2026, 11, 6), model_tag_key="ml:model")
        # the server is gone: the poll fails, is logged and shows in /healthz
        failed = CycleReport(as_of=dt.date(2026, 11, 5))
        with caplog.at_level(logging.INFO):
            fetch_sources(factory, [polled], failed)
        with session_scope(factory) as session:
            health = health_snapshot(session, dt.datetime(2026, 11, 6, tzinfo=dt.UTC))
            run = session.scalars(select(IngestionRun)).all()[-1]
            recorded = run.location
    shown = [
        source.location,
        source.where,
        report.location,
        recorded,
        polled.name,
        polled.location,
        str(failed.fetch_errors),
        str(health),
        caplog.text,
    ]
    for text in shown:
        for secret in SECRETS:
            assert secret not in text, (secret, text)
    assert "token=***" in polled.name and "aggregate=namespace" in polled.name
    assert "X-Amz-Signature=***" in recorded and "aggregate=namespace" in recorded
    assert health["source_failures"][0]["source"] == polled.name


def test_the_settings_reach_the_polled_and_the_cli_sources() -> None:
    settings = Settings(
        poll_sources="opencost:http://oc:9003",
        opencost_timeout_seconds=7,
        opencost_max_bytes=1234,
    )
    [polled] = configured_sources(settings, dt.date(2026, 11, 6), model_tag_key="ml:model")
    built = polled._source
    assert isinstance(built, OpenCostSource)
    assert (built.timeout, built.max_bytes) == (7, 1234)
    assert Settings().opencost_max_bytes == 536_870_912


@pytest.mark.parametrize("framing", ["content-length", "until-close"])
def test_the_deadline_cuts_a_drip_off_rather_than_waiting_for_it_to_end(
    session: Session, framing: str
) -> None:
    """The fetch gives up at its deadline: the server's drip is cut off well before its end (a
    body ending when the socket closes, or any HTTP/1.0 answer, hands the socket from the
    connection to the response; the cut used to miss it and wait for the whole drip)."""
    sent: list[int] = []

    def dripping(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if framing == "content-length":
            handler.send_header("Content-Length", "40")
        else:
            handler.send_header("Connection", "close")
            handler.close_connection = True
        handler.end_headers()
        stopping: threading.Event = handler.server_stopping  # type: ignore[attr-defined]
        for _ in range(40):
            if stopping.wait(0.25):
                return
            handler.wfile.write(b" ")
            handler.wfile.flush()
            sent.append(1)

    with server(dripping) as (url, _seen):
        source = OpenCostSource(url, window=WINDOW, timeout=1)
        with pytest.raises(IngestError, match="no complete answer within 1 s"):
            ingest(source, session=session)
    assert len(sent) < 40  # the drip lasts 10 s: the fetch left after about 1
