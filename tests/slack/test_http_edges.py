"""The HTTP edge in front of Bolt: body limits, signatures before parsing, replays, bad payloads."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import time
from urllib.parse import urlencode, urlsplit

import pytest

from bot.web.server import RecentSignatures
from tests.support.slack_app import SlackHarness
from tests.support.slack_requests import sign, slash_command


def raw_post(
    http_slack: SlackHarness,
    body: bytes,
    *,
    content_length: int | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 5.0,
) -> tuple[int, bytes]:
    """POST over a bare socket (so Content-Length can lie) and return (status, response body)."""
    assert http_slack.url
    parts = urlsplit(http_slack.url)
    head = {"Host": parts.netloc, "Content-Type": "application/json", "Connection": "close"}
    if content_length is not None:
        head["Content-Length"] = str(content_length)
    head.update(headers or {})
    request = "POST /slack/events HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items())
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as sock:
        sock.sendall(request.encode() + b"\r\n" + body)
        # Keep our side open (as a client still "uploading" would); the server must answer anyway.
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    status_line, _, rest = received.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def signed_post(
    http_slack: SlackHarness,
    body: bytes,
    *,
    content_type: str = "application/json",
    timestamp: str | None = None,
    signature: str | None = None,
) -> tuple[int, bytes]:
    ts = timestamp if timestamp is not None else str(int(time.time()))
    return raw_post(
        http_slack,
        body,
        content_length=len(body),
        headers={
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": signature or sign(body, ts),
        },
    )


def test_an_oversized_content_length_gets_413_without_the_body_being_read(
    http_slack: SlackHarness,
) -> None:
    # 150 MB announced, a few bytes sent: the answer must come before the rest would arrive.
    status, _ = raw_post(http_slack, b'{"type":', content_length=150 * 1024 * 1024)
    assert status == 413


def test_a_body_just_over_the_cap_gets_413_and_one_at_the_cap_is_let_through(
    http_slack: SlackHarness,
) -> None:
    cap = http_slack.services.settings.max_body_bytes
    assert cap == 1024 * 1024
    # Only the first bytes are sent: a refusal that waited for the rest would time out.
    assert raw_post(http_slack, b"x" * 64, content_length=cap + 1)[0] == 413
    challenge = json.dumps({"type": "url_verification", "challenge": "c4"}).encode()
    body = challenge + b" " * (cap - len(challenge))
    status, answer = signed_post(http_slack, body)
    assert (status, len(body)) == (200, cap) and b"c4" in answer


def test_the_body_cap_is_a_setting(small_cap_slack: SlackHarness) -> None:
    assert small_cap_slack.services.settings.max_body_bytes == 2000
    assert raw_post(small_cap_slack, b"{", content_length=2001)[0] == 413
    challenge = json.dumps({"type": "url_verification", "challenge": "c4"}).encode()
    assert signed_post(small_cap_slack, challenge + b" " * (2000 - len(challenge)))[0] == 200


def chunked(body: bytes, size: int = 1000) -> bytes:
    """Return a body in HTTP/1.1 chunked transfer encoding."""
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def test_a_chunked_body_is_decoded_and_judged_like_any_other(http_slack: SlackHarness) -> None:
    # waitress decodes chunked bodies (wsgiref could not, so they were refused with 411)
    status, _ = raw_post(http_slack, chunked(b"hello"), headers={"Transfer-Encoding": "chunked"})
    assert status == 401  # unsigned
    challenge = json.dumps({"type": "url_verification", "challenge": "c5"}).encode()
    ts = str(int(time.time()))
    signed = {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sign(challenge, ts)}
    status, answer = raw_post(
        http_slack, chunked(challenge, 7), headers={"Transfer-Encoding": "chunked", **signed}
    )
    assert status == 200 and b"c5" in answer
    assert raw_post(http_slack, b"", headers={})[0] == 401  # no body at all, no signature


def test_a_chunked_body_over_the_cap_gets_413(small_cap_slack: SlackHarness) -> None:
    status, _ = raw_post(
        small_cap_slack, chunked(b"x" * 3000), headers={"Transfer-Encoding": "chunked"}
    )
    assert status == 413


def test_an_unsigned_or_stale_request_is_refused_before_its_body_is_parsed(
    http_slack: SlackHarness, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    ts = str(int(time.time()))
    assert signed_post(http_slack, b"{not json", signature="v0=" + "0" * 64, timestamp=ts)[0] == 401
    old = str(int(time.time()) - 600)
    assert signed_post(http_slack, b"{not json", timestamp=old)[0] == 401
    missing = raw_post(http_slack, b"{not json", content_length=9)
    assert missing[0] == 401
    assert "Traceback" not in capsys.readouterr().err
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"{not json", "application/json"),
        (b"[1, 2, 3]", "application/json"),
        (urlencode({"payload": "{broken"}).encode(), "application/x-www-form-urlencoded"),
        (urlencode({"payload": "[1]"}).encode(), "application/x-www-form-urlencoded"),
        (b'{"type": "event_callback", "text": "\xff\xfe"}', "application/json"),
    ],
    ids=["json", "json-not-an-object", "form-payload", "form-payload-not-an-object", "not-utf8"],
)
def test_a_signed_but_malformed_body_gets_400_and_one_warning(
    http_slack: SlackHarness,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    body: bytes,
    content_type: str,
) -> None:
    caplog.set_level(logging.WARNING)
    status, _ = signed_post(http_slack, body, content_type=content_type)
    assert status == 400
    assert "Traceback" not in capsys.readouterr().err
    assert not [r for r in caplog.records if r.exc_info]
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "\n" not in warnings[0].getMessage()


def test_a_non_numeric_timestamp_gets_400(
    http_slack: SlackHarness, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    body = b'{"type": "event_callback"}'
    assert signed_post(http_slack, body, timestamp="soon")[0] == 400
    assert "Traceback" not in capsys.readouterr().err
    assert not [r for r in caplog.records if r.exc_info]


def test_a_replayed_request_is_refused_inside_the_window(http_slack: SlackHarness) -> None:
    body = slash_command(
        "help", user="U0AAA111", channel="C1", response_url=f"{http_slack.fake.url}respond/replay"
    ).encode()
    ts = str(int(time.time()))
    signature = sign(body, ts)
    kind = "application/x-www-form-urlencoded"
    first = signed_post(http_slack, body, content_type=kind, timestamp=ts, signature=signature)
    again = signed_post(http_slack, body, content_type=kind, timestamp=ts, signature=signature)
    assert first[0] == 200
    assert again[0] in (401, 409)
    # Slack's own retries are signed afresh (new timestamp), so they still get through.
    retry_ts = str(int(ts) + 1)
    retried = signed_post(http_slack, body, content_type=kind, timestamp=retry_ts)
    assert retried[0] == 200
    time.sleep(0.2)
    assert len([c for c in http_slack.fake.calls if c.method == "respond/replay"]) == 2


def test_remembered_signatures_expire_with_their_window_and_stay_bounded() -> None:
    now = [1_000_000.0]
    seen = RecentSignatures(window=300, limit=3, clock=lambda: now[0])
    assert seen.first_sighting(1_000_000, "v0=a")
    assert not seen.first_sighting(1_000_000, "v0=a")
    now[0] += 302  # the signature could no longer pass the timestamp check: forgotten
    assert seen.first_sighting(1_000_000, "v0=a")
    for sig in ("v0=b", "v0=c", "v0=d"):
        assert seen.first_sighting(int(now[0]), sig)
    assert len(seen._expiry) == 3  # the oldest was dropped to stay within the limit


def test_http_1_1_keeps_the_connection_open_between_requests(http_slack: SlackHarness) -> None:
    assert http_slack.url
    parts = urlsplit(http_slack.url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)
    try:
        connection.request("GET", "/healthz")
        first = connection.getresponse()
        assert json.loads(first.read())["status"] == "ok"
        assert first.version == 11 and not first.will_close
        sock = connection.sock
        challenge = json.dumps({"type": "url_verification", "challenge": "c6"}).encode()
        ts = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": sign(challenge, ts),
        }
        connection.request("POST", "/slack/events", body=challenge, headers=headers)
        second = connection.getresponse()
        assert second.status == 200 and b"c6" in second.read()
        # the same socket carried both: http.client reconnects only after a close
        assert connection.sock is sock and not second.will_close
        connection.request("POST", "/slack/events", body=b"{}", headers={})
        refused = connection.getresponse()
        assert refused.status == 401
        refused.read()
        assert connection.sock is sock  # a refusal does not cost the connection either
    finally:
        connection.close()
