"""A hostile FOCUS tag value reaches the FinOps post escaped, never as a live mention or link."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from bot.cli import main
from tests.support.cli import import_registry_file, write_focus_rows
from tests.support.fake_slack import FakeSlack
from tests.support.sample_registry import REGISTRY

HOSTILE_TAG = "` <!channel> <https://x.example|click> & <@U0AAA111>"


def hostile_focus_file(path: Path) -> None:
    """Write a FOCUS export with one week of unallocated spend tagged with HOSTILE_TAG."""
    days = [dt.date(2024, 9, 2) + dt.timedelta(days=offset) for offset in range(7)]
    write_focus_rows(
        path,
        (
            {
                "BilledCost": "40.00",
                "EffectiveCost": "40.00",
                "ListCost": "40.00",
                "ChargePeriodStart": f"{day} 10:00:00",
                "ChargePeriodEnd": f"{day} 11:00:00",
                "ResourceId": f"i-hostile-{offset}",
                "Id": str(900000 + offset),
                "Tags": json.dumps({"ml:model": HOSTILE_TAG}),
            }
            for offset, day in enumerate(days)
        ),
    )


def test_hostile_tag_value_is_escaped_in_the_unallocated_post(
    database_url: str,
    tmp_path: Path,
    fake_slack: FakeSlack,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = import_registry_file(database_url, tmp_path, REGISTRY)
    export = tmp_path / "focus.csv"
    hostile_focus_file(export)
    assert main([*db, "ingest", "focus", str(export)]) == 0
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_API_URL", fake_slack.url)
    assert main([*db, "poll", "--as-of", "2024-09-09", "--only", "unallocated"]) == 0
    out = capsys.readouterr().out
    posts = fake_slack.calls_to("chat.postMessage")
    assert [p.params["channel"] for p in posts] == ["C0FINOPS"]
    message = posts[0].params
    mrkdwn = [message["text"]] + [
        text
        for block in message["blocks"]
        for text in [
            (block.get("text") or {}).get("text", "")
            if (block.get("text") or {}).get("type") == "mrkdwn"
            else "",
            *(e.get("text", "") for e in block.get("elements") or [] if e.get("type") == "mrkdwn"),
        ]
    ]
    body = "\n".join(mrkdwn)
    assert "&lt;!channel&gt;" in body
    assert "<!channel>" not in body
    assert "<https://x.example" not in body
    assert "<@U0AAA111>" not in body  # a tag value is never a mention, even of a real user
    # the terminal shows the tag as it is: no Slack escapes, no raw markup interpretation
    assert "&lt;" not in out
