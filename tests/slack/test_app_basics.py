"""Signatures, help, unknown subcommands and the health check, through the real app."""

from __future__ import annotations

import json
import time
import urllib.request

from tests.slack.conftest import SlackHarness


def test_bad_signature_and_stale_timestamp_get_401(slack: SlackHarness) -> None:
    assert slack.command("help", secret="wrong").status == 401
    assert slack.command("help", timestamp=int(time.time()) - 600).status == 401
    assert not [c for c in slack.fake.calls if c.method.startswith("respond/")]


def test_help_lists_every_subcommand_with_an_example(slack: SlackHarness) -> None:
    result = slack.command("")
    assert result.status == 200
    reply = slack.responses(1)[0]
    assert reply["response_type"] == "ephemeral"
    assert "/mlcost unallocated" in reply["text"]


def test_unknown_subcommand_suggests_the_closest(slack: SlackHarness) -> None:
    assert slack.command("unalocated").status == 200
    reply = slack.responses(1)[0]
    assert "I don't know `unalocated`" in reply["text"]
    assert "Did you mean `unallocated`" in reply["text"]


def test_healthz_checks_the_database(slack: SlackHarness) -> None:
    with urllib.request.urlopen(slack.url + "healthz", timeout=5) as response:
        assert response.status == 200
        assert json.loads(response.read()) == {"status": "ok", "database": "ok"}


def test_waste_replies_with_findings(slack: SlackHarness) -> None:
    assert slack.command("waste").status == 200
    reply = slack.responses(1)[0]
    assert reply["response_type"] == "ephemeral"
    assert reply["text"] == "Waste: nothing found this week."
