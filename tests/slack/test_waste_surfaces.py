"""`/mlcost waste [team|model]` and App Home show resource findings, through signed requests.

The organisation, its ledger and its findings are tests/support/waste_surfaces.py's; the app's
clock is that module's NOW (Dec 1 06:00 UTC).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.slack_app import SlackHarness, seed
from tests.support.waste_surfaces import NOW, seed_all


@pytest.fixture
def clock() -> Callable[[], dt.datetime]:
    return lambda: NOW


@pytest.fixture
def org(slack: SlackHarness) -> Iterator[SlackHarness]:
    seed(slack, seed_all)
    yield slack


def texts(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def assert_no_outside_markup(text: str) -> None:
    assert "<!channel>" not in text and "<https://evil" not in text


def test_waste_for_everyone_ranks_ledger_and_resource_findings_together(
    org: SlackHarness,
) -> None:
    assert org.command("waste").status == 200
    reply = org.responses(1)[0]
    # as of Dec 1 the ledger week holds six days of spend (through Nov 30): the orphaned tag's
    # third is $257.14 ($300 on Nov 30)
    assert reply["text"] == "Waste: 4 findings, about $1,473/month"
    sections = [b["text"]["text"] for b in reply["blocks"] if b["type"] == "section"]
    assert [s.split("*")[1] for s in sections] == [
        "GPU instance `i-legacybox`",
        "SageMaker endpoint `alpha-prod`",
        "Orphaned (tagged for an unregistered model): `legacy-ranker`",
        "S3 prefix `s3://gamma-ckpt/&lt;!channel&gt; ˋrunˋ &amp; &lt;https://evil.example|x&gt;/`",
    ]
    assert sections[0].startswith("*GPU instance `i-legacybox`* — $700/month · resource scan\n")
    assert "_Price:_ price table (test, 2025-06)" in sections[0]
    assert "123456789012 / us-east-1 · unowned" in sections[0]
    assert "Idle endpoint" not in texts(reply["blocks"])  # listed once, as alpha-prod
    note = reply["blocks"][-1]["elements"][0]["text"]
    assert "Not counted (Keep or Not waste): EBS volume `vol-beta` $80.00/month" in note
    assert "EBS volume vol-gone closed on Nov 30, 2026 (no longer found): saved $14.00" in note
    assert "*Closed findings saved $14.00 so far (1 closed)*" in note
    assert_no_outside_markup(texts(reply["blocks"]) + reply["text"])


def test_waste_for_a_team_or_model_shows_its_own_and_no_unowned_ones(org: SlackHarness) -> None:
    org.command("waste ranking")
    ranking = org.responses(1)[-1]
    shown = texts(ranking["blocks"])
    assert ranking["text"] == "Waste: 1 finding, about $420/month"
    assert "SageMaker endpoint `alpha-prod`" in shown and "`vol-beta`" in shown
    assert "i-legacybox" not in shown and "legacy-ranker" not in shown
    assert "Closed findings" not in shown  # ranking closed nothing
    org.command("waste platform")
    platform = org.responses(2)[-1]
    shown = texts(platform["blocks"])
    assert "S3 prefix `s3://gamma-ckpt/&lt;!channel&gt;" in shown
    assert "Closed findings saved $14.00 so far (1 closed)" in shown  # vol-gone, team platform
    assert "alpha-prod" not in shown and "i-legacybox" not in shown
    assert_no_outside_markup(shown)
    org.command("waste alpha")
    assert org.responses(3)[-1]["text"] == "Waste: 1 finding, about $420/month"


def test_app_home_shows_the_users_models_open_resource_findings(org: SlackHarness) -> None:
    assert org.event({"type": "app_home_opened", "user": "U0AAA111", "tab": "home"}).status == 200
    view = org.fake.wait_for("views.publish")[0].params["view"]
    shown = texts(view["blocks"])
    assert "*Waste on your models:* 1 open resource finding, *$420*/month" in shown
    assert "• SageMaker endpoint `alpha-prod` (alpha) — *$420*/month" in shown
    assert "i-legacybox" not in shown
