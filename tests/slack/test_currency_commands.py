"""/mlcost views over a ledger in another currency than MLCOST_CURRENCY, or in several."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy.orm import Session

from tests.support.alert_walk import add_spend, spend_row
from tests.support.sample_registry import load_registry
from tests.support.slack_app import SlackHarness, seed

DAY = dt.date(2026, 11, 18)  # the harness clock is 2026-11-20


def euro_row(model: str | None, cost: str) -> dict[str, Any]:
    return {
        **spend_row(DAY, model, "serving", "ranking" if model else None, cost),
        "currency": "EUR",
        "billing_account": "eu-1",
    }


def test_a_euro_ledger_is_not_shown_as_dollars(slack: SlackHarness) -> None:
    def euros(session: Session) -> None:
        load_registry(session)
        add_spend(session, [euro_row("recsys", "900"), euro_row(None, "300")])

    seed(slack, euros)
    for command in ("model recsys", "team ranking", "top", "unallocated"):
        slack.command(command)
        reply = slack.responses(1)[0]
        assert reply["response_type"] == "ephemeral", command
        assert (
            "MLCOST_CURRENCY is USD, but the ledger holds spend billed in EUR only"
            in (reply["text"])
        ), command
        assert "$900" not in reply["text"] and "$1,200" not in reply["text"]
        slack.fake.calls.clear()


def test_a_model_billed_in_two_currencies_is_refused_not_summed(slack: SlackHarness) -> None:
    def mixed(session: Session) -> None:
        load_registry(session)
        add_spend(
            session,
            [spend_row(DAY, "recsys", "serving", "ranking", "1000"), euro_row("recsys", "900")],
        )

    seed(slack, mixed)
    slack.command("model recsys")
    reply = slack.responses(1)[0]
    assert reply["response_type"] == "ephemeral"
    assert "`recsys`'s spend in 30d is billed in EUR and USD" in reply["text"]
    assert "1,900" not in reply["text"]
    assert not slack.fake.calls_to("files.getUploadURLExternal")  # no chart of the sum


def test_app_home_shows_a_euro_model_in_euros(slack: SlackHarness) -> None:
    def euros(session: Session) -> None:
        load_registry(session)
        add_spend(
            session,
            [euro_row("recsys", "900"), spend_row(DAY, "prod", "serving", "platform", "50")],
        )

    seed(slack, euros)
    slack.event({"type": "app_home_opened", "user": "U0AAA111", "tab": "home"})
    view = slack.fake.wait_for("views.publish")[0].params["view"]
    shown = str(view["blocks"])
    assert "€900" in shown and "$900" not in shown
    # its USD 12,000 budget is not compared with euros
    assert "12,000" not in shown
