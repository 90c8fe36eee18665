"""Slack down after serve started: each command is still acknowledged, and no traceback is logged.

Before, Bolt called auth.test on the first request (and on every one until it succeeded): with
Slack unreachable that gave a traceback per request, and with Slack failing, the reply "your
installation with this app is no longer available. Please reinstall".
"""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.chaos.replicas import ServeProcess, wait_until
from tests.support.fake_slack import FakeSlack
from tests.support.slack_requests import FORM, SECRET, signed_headers, slash_command

SLACK_METHODS = ("auth.test", "chat.postMessage", "chat.postEphemeral", "respond/abc")


def post_command(serve: ServeProcess, text: str, response_url: str) -> tuple[int, str]:
    body = slash_command(text, user="U1", channel="C1", response_url=response_url)
    request = urllib.request.Request(
        serve.url + "slack/events",
        data=body.encode(),
        headers=signed_headers(body, content_type=FORM),
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.parametrize("outage", ["unreachable", "failing"])
def test_commands_are_acknowledged_without_a_traceback_while_slack_is_down(
    migrated_database_url: str, tmp_path: Path, outage: str
) -> None:
    fake = FakeSlack().start()
    settings = {
        "MLCOST_DATABASE_URL": migrated_database_url,
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": fake.url,
        "MLCOST_LEADER_CHECK_SECONDS": "0.2",
    }
    serve = ServeProcess.start("serve", tmp_path, settings)
    try:
        serve.wait_ready()
        if outage == "unreachable":
            fake.stop()
        else:
            for method in SLACK_METHODS:
                fake.fail(method, 500, times=100)
        for text in ("help", "model nosuchmodel", "budget"):
            status, body = post_command(serve, text, fake.url + "respond/abc")
            assert status == 200, body
            assert "reinstall" not in body
        if outage == "unreachable":
            wait_until(
                lambda: "Slack could not be reached" in serve.log(), 20, "the outage to be logged"
            )
        else:  # the replies were attempted (and refused with 500)
            wait_until(lambda: len(fake.calls_to("respond/abc")) >= 3, 20, "three replies")
        assert serve.terminate() == 0
        log = serve.log()
        assert "Traceback" not in log, log[-3000:]
        assert "unhandled error" not in log
        if outage == "failing":
            assert len(fake.calls_to("auth.test")) == 1  # serve's own check, none per request
    finally:
        serve.cleanup()
        if outage == "failing":
            fake.stop()


def test_a_slack_read_timeout_is_an_outage_but_a_render_timeout_is_not() -> None:
    import concurrent.futures
    import socket

    from slack_sdk import WebClient

    from bot.slack.error_boundary import slack_outage

    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        client = WebClient(
            token="xoxb-x", base_url=f"http://127.0.0.1:{silent.getsockname()[1]}/", timeout=0.2
        )
        with pytest.raises(TimeoutError) as read_timeout:
            client.auth_test()
    assert slack_outage(read_timeout.value) == "TimeoutError: timed out"
    with pytest.raises(TimeoutError) as render_timeout:
        concurrent.futures.Future().result(timeout=0.01)
    assert slack_outage(render_timeout.value) is None  # a bug here: traceback and reference
