"""What a person sees when something breaks: an ephemeral note with a reference, never silence."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select

from bot.db.engine import make_session_factory, session_scope
from bot.db.schema import Budget
from tests.support.budget_alerts import T0, click, cycle, seed_month
from tests.support.slack_app import SlackHarness
from tests.support.slack_requests import view_submission

ALPHA = "budget:model:alpha:2026-11:actual:50"


def take_the_database_down(slack: SlackHarness, tmp_path: Path) -> None:
    """Point the app at a database that cannot be opened (as if the server went away)."""
    gone = create_engine(f"sqlite:///{tmp_path / 'no-such-dir' / 'x.db'}")
    slack.services.session_factory = make_session_factory(gone)


def reference_in(text: str) -> str:
    found = re.search(r"(?:reference|ref) `?([0-9a-f]{8})`?", text)
    assert found, text
    return found.group(1)


def assert_logged_with_traceback(caplog: pytest.LogCaptureFixture, ref: str) -> None:
    logged = [r for r in caplog.records if ref in r.getMessage()]
    assert logged and logged[0].levelno == logging.ERROR and logged[0].exc_info


@pytest.mark.parametrize("action_id", ["budget_ack", "budget_snooze"])
def test_a_click_with_the_database_down_tells_the_clicker_with_a_reference(
    slack: SlackHarness, tmp_path: Path, caplog: pytest.LogCaptureFixture, action_id: str
) -> None:
    seed_month(slack)
    cycle(slack, T0)
    take_the_database_down(slack, tmp_path)
    click(slack, ALPHA, action_id, "U0AAA111")  # asserts HTTP 200
    told = slack.responses(1)[0]
    assert told["response_type"] == "ephemeral" and told.get("replace_original") is False
    assert "went wrong" in told["text"]
    assert_logged_with_traceback(caplog, reference_in(told["text"]))
    assert slack.fake.calls_to("chat.update") == []


def open_raise_modal(slack: SlackHarness) -> dict[str, Any]:
    seed_month(slack)
    cycle(slack, T0)
    click(slack, ALPHA, "budget_raise", "U0AAA111")
    view: dict[str, Any] = slack.fake.wait_for("views.open")[0].params["view"]
    return view


def submit(slack: SlackHarness, view: dict[str, Any], value: str) -> Any:
    payload = view_submission(view, user="U0AAA111", block="amount", value=value)
    result = slack.action(payload)
    assert result.status == 200, result
    return result.json()


def test_raise_budget_refuses_odd_amounts_in_the_modal(
    slack: SlackHarness, caplog: pytest.LogCaptureFixture
) -> None:
    view = open_raise_modal(slack)
    odd = ["1000.123456789012345", "1e400", "NaN", "-5", "1e-400", "1e999999k", "Infinity", "-0.5k"]
    for value in odd:
        answer = submit(slack, view, value)
        assert answer["response_action"] == "errors", value
        assert answer["errors"]["amount"], value
    assert not [r for r in caplog.records if r.exc_info]
    with session_scope(slack.session_factory) as session:
        budget = session.scalars(select(Budget).where(Budget.scope == "model:alpha")).one()
    assert budget.monthly_amount == 3000
    assert submit(slack, view, "4500.25") is None  # a plain ack closes the modal
    with session_scope(slack.session_factory) as session:
        budget = session.scalars(select(Budget).where(Budget.scope == "model:alpha")).one()
    assert budget.monthly_amount == pytest.approx(4500.25)


def test_raise_budget_with_the_database_down_shows_a_reference_in_the_modal(
    slack: SlackHarness, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    view = open_raise_modal(slack)
    take_the_database_down(slack, tmp_path)
    answer = submit(slack, view, "4500")
    assert answer["response_action"] == "update"
    text = str(answer["view"]["blocks"])
    assert "went wrong" in text
    assert_logged_with_traceback(caplog, reference_in(text))
