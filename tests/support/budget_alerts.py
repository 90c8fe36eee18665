"""Budget alerts posted to the fake Slack, and clicks on their buttons."""

from __future__ import annotations

import datetime as dt
from typing import Any

from bot.db.engine import session_scope
from bot.poll.cycle import run_cycle
from tests.support.alert_walk import MONTH_START, add_spend, days, seed_walk, walk_day_rows
from tests.support.slack_app import SlackHarness
from tests.support.slack_requests import posted_button_click

T0 = dt.datetime(2026, 11, 21, 6, tzinfo=dt.UTC)  # evaluates as of Nov 20


def seed_month(slack: SlackHarness) -> None:
    """Seed the alert walk's registry and its spend for all of November."""
    seed_walk(slack.session_factory)
    with session_scope(slack.session_factory) as session:
        add_spend(
            session, [r for d in days(MONTH_START, dt.date(2026, 12, 1)) for r in walk_day_rows(d)]
        )


def cycle(slack: SlackHarness, now: dt.datetime, **kw: Any) -> Any:
    """Run one notification cycle as the scheduler would, posting to the fake Slack."""
    kw.setdefault("edge", slack.services.delivery_edge)
    return run_cycle(
        session_factory=slack.session_factory, settings=slack.services.settings, now=now, **kw
    )


def click(slack: SlackHarness, key: str, action_id: str, user: str) -> None:
    """Click a button of the posted alert with this outbox key, as the user."""
    channel, message = next(
        (c, m)
        for (c, _), m in slack.fake.messages.items()
        if (m.get("metadata") or {}).get("event_payload", {}).get("key") == key
    )
    payload = posted_button_click(
        channel,
        message,
        user=user,
        action_id=action_id,
        block_id="budget_alert_actions",
        response_url=f"{slack.fake.url}respond/click",
    )
    assert slack.action(payload).status == 200
    slack.settle()  # each click is handled before the next one is made
