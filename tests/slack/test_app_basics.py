"""Signatures, help, unknown subcommands and the health check, through the real app."""

from __future__ import annotations

import datetime as dt
import json
import time
import urllib.request
from typing import Any

from bot.db.engine import session_scope
from bot.db.schema import IngestionRun, OutboxMessage
from tests.support.slack_app import SlackHarness


def test_bad_signature_and_stale_timestamp_get_401(slack: SlackHarness) -> None:
    assert slack.command("help", secret="wrong").status == 401
    assert slack.command("help", timestamp=int(time.time()) - 600).status == 401
    assert not [c for c in slack.fake.calls if c.method.startswith("respond/")]


def test_help_lists_every_subcommand_with_an_example(http_slack: SlackHarness) -> None:
    # the happy path through bot/web/server.py: signed HTTP in, the reply via response_url
    result = http_slack.command("")
    assert result.status == 200
    reply = http_slack.responses(1)[0]
    assert reply["response_type"] == "ephemeral"
    assert "/mlcost unallocated" in reply["text"]


def test_unknown_subcommand_suggests_the_closest(slack: SlackHarness) -> None:
    assert slack.command("unalocated").status == 200
    reply = slack.responses(1)[0]
    assert "I don't know `unalocated`" in reply["text"]
    assert "Did you mean `unallocated`" in reply["text"]


def test_healthz_checks_the_database_and_reports_the_backlog(http_slack: SlackHarness) -> None:
    slack = http_slack
    assert slack.url

    def health() -> dict[str, Any]:
        with urllib.request.urlopen(slack.url + "healthz", timeout=5) as response:
            assert response.status == 200
            return dict(json.loads(response.read()))

    assert health() == {
        "status": "ok",
        "database": "ok",
        "outbox": {"waiting": 0, "oldest_waiting_seconds": None, "failed": 0, "failed_recent": []},
        "last_ingestion": None,
        "source_failures": [],
        "review_threads_to_update": 0,
        "review_threads_failed": 0,
        "review_threads_failed_recent": [],
    }
    an_hour_ago = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    with session_scope(slack.session_factory) as session:
        for n, status in enumerate(("pending", "sending", "failed", "delivered")):
            session.add(
                OutboxMessage(
                    dedupe_key=f"k{n}",
                    kind="test",
                    channel="C1",
                    payload={},
                    status=status,
                    created_at=an_hour_ago,
                    last_error="channel_not_found" if status == "failed" else None,
                )
            )
        session.add(
            IngestionRun(source="focus", location="x", status="succeeded", finished_at=an_hour_ago)
        )
    report = health()
    assert report["outbox"]["waiting"] == 2 and report["outbox"]["failed"] == 1
    assert [f["reason"] for f in report["outbox"]["failed_recent"]] == ["channel_not_found"]
    assert 3590 <= report["outbox"]["oldest_waiting_seconds"] <= 3700
    assert report["last_ingestion"] == {"source": "focus", "finished_at": an_hour_ago.isoformat()}


def test_waste_on_an_empty_ledger_gives_no_verdict(slack: SlackHarness) -> None:
    assert slack.command("waste").status == 200
    reply = slack.responses(1)[0]
    assert reply["response_type"] == "ephemeral"
    assert reply["text"] == "Waste: no verdict, the billing data is stale."  # never "nothing found"
