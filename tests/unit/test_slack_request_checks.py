"""The checks in front of Bolt as WSGI middleware, whatever server runs them: size, signature,
replay and payload, each refused before the wrapped app sees the request."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterable
from typing import Any

import pytest

from bot.web.server import RecentSignatures, SlackEvents, SlackRequestChecks
from tests.support.slack_requests import sign

CAP = 100


class Untouchable(io.RawIOBase):
    """A request body that must not be read."""

    def read(self, size: int = -1) -> bytes:
        raise AssertionError("the body was read")


class Inner:
    """The wrapped app: records the body it was handed."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        body = environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))
        self.bodies.append(body)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"inner"]


def environ_for(
    body: bytes,
    *,
    length: str | None = None,
    signed: bool = True,
    timestamp: str | None = None,
    stream: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    ts = timestamp or str(int(time.time()))
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/slack/events",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "CONTENT_TYPE": "application/json",
        "wsgi.input": stream if stream is not None else io.BytesIO(body),
        **extra,
    }
    environ["CONTENT_LENGTH"] = str(len(body)) if length is None else length
    if signed:
        environ["HTTP_X_SLACK_REQUEST_TIMESTAMP"] = ts
        environ["HTTP_X_SLACK_SIGNATURE"] = sign(body, ts)
    return environ


def call(checks: SlackRequestChecks, environ: dict[str, Any]) -> tuple[int, bytes]:
    answered: list[str] = []
    body = b"".join(checks(environ, lambda status, headers: answered.append(status)))
    return int(answered[0].split()[0]), body


@pytest.fixture
def inner() -> Inner:
    return Inner()


@pytest.fixture
def checks(inner: Inner) -> SlackRequestChecks:
    return SlackRequestChecks(inner, signing_secret="test-signing-secret", max_body_bytes=CAP)


def challenge(size: int = 0) -> bytes:
    body = json.dumps({"type": "url_verification", "challenge": "c"}).encode()
    return body + b" " * max(0, size - len(body))


def test_a_signed_body_at_the_cap_reaches_the_app_byte_for_byte(
    checks: SlackRequestChecks, inner: Inner
) -> None:
    body = challenge(CAP)
    assert call(checks, environ_for(body)) == (200, b"inner")
    assert inner.bodies == [body]


def test_a_length_over_the_cap_is_refused_without_reading_the_body(
    checks: SlackRequestChecks, inner: Inner
) -> None:
    environ = environ_for(b"", length=str(CAP + 1), stream=Untouchable())
    status, body = call(checks, environ)
    assert (status, body) == (413, b"Request Entity Too Large")  # no detail
    assert inner.bodies == []


def test_an_ended_input_without_a_length_is_read_no_further_than_the_cap(
    checks: SlackRequestChecks, inner: Inner
) -> None:
    # waitress ends the input itself (a decoded chunked body): read up to cap + 1, then refuse
    stream = io.BytesIO(b"x" * (CAP * 10))
    environ = environ_for(b"", length="", stream=stream)
    environ["wsgi.input_terminated"] = True
    assert call(checks, environ)[0] == 413
    assert stream.tell() == CAP + 1
    assert inner.bodies == []


def test_a_raw_stream_without_a_length_is_not_read(checks: SlackRequestChecks) -> None:
    # a server that hands over the socket: a chunked body's end is unknown, so 411
    environ = environ_for(b"", length="", stream=Untouchable(), HTTP_TRANSFER_ENCODING="chunked")
    assert call(checks, environ)[0] == 411


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"CONTENT_LENGTH": "12x"}, 400),
        ({"REQUEST_METHOD": "GET"}, 405),
        ({"HTTP_X_SLACK_SIGNATURE": "v0=" + "0" * 64}, 401),
        ({"HTTP_X_SLACK_REQUEST_TIMESTAMP": "soon"}, 400),
    ],
    ids=["length-not-a-number", "not-a-post", "bad-signature", "timestamp-not-a-number"],
)
def test_refusals_never_reach_the_app(
    checks: SlackRequestChecks, inner: Inner, change: dict[str, str], status: int
) -> None:
    environ = environ_for(challenge())
    environ.update(change)
    assert call(checks, environ)[0] == status
    assert inner.bodies == []


def test_a_stale_or_unsigned_request_is_refused(checks: SlackRequestChecks) -> None:
    stale = str(int(time.time()) - 600)
    assert call(checks, environ_for(challenge(), timestamp=stale))[0] == 401
    assert call(checks, environ_for(challenge(), signed=False))[0] == 401


def test_a_replay_is_refused_and_a_fresh_signature_is_not(
    inner: Inner,
) -> None:
    now = [float(int(time.time()))]
    seen = RecentSignatures(clock=lambda: now[0])
    checks = SlackRequestChecks(
        inner, signing_secret="test-signing-secret", max_body_bytes=CAP, seen=seen
    )
    ts = str(int(now[0]))
    assert call(checks, environ_for(challenge(), timestamp=ts))[0] == 200
    assert call(checks, environ_for(challenge(), timestamp=ts))[0] == 409
    assert call(checks, environ_for(challenge(), timestamp=str(int(ts) + 1)))[0] == 200
    assert len(inner.bodies) == 2


@pytest.mark.parametrize("body", [b"{not json", b"[1]", b'{"text": "\xff"}'])
def test_a_signed_malformed_payload_gets_400(
    checks: SlackRequestChecks, inner: Inner, body: bytes
) -> None:
    assert call(checks, environ_for(body))[0] == 400
    assert inner.bodies == []


def test_bolt_failing_behind_the_checks_is_a_500_logged_with_a_reference(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class BrokenBolt:
        oauth_flow = None

        def dispatch(self, request: Any) -> Any:
            raise RuntimeError("bolt broke")

    checks = SlackRequestChecks(
        SlackEvents(BrokenBolt()),  # type: ignore[arg-type]
        signing_secret="test-signing-secret",
        max_body_bytes=CAP,
    )
    assert call(checks, environ_for(challenge())) == (500, b"Internal Server Error")
    [record] = [r for r in caplog.records if r.exc_info]
    assert "reference" in record.getMessage() and "bolt broke" not in record.getMessage()
