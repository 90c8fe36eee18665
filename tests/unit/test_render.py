"""The notify layer's one render step hands each planned message to its own Block Kit builder."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.anomalies.detect import Anomaly, Baseline
from bot.anomalies.messages import AnomalyAlertMessage
from bot.budgets.messages import BudgetAlertMessage
from bot.budgets.plan import ACTUAL, FORECAST, BudgetAlert
from bot.notify.outbox import planned_post
from bot.review.messages import (
    ReviewItemMessage,
    ReviewParentMessage,
    ReviewReminderMessage,
    SignoffDigestMessage,
)
from bot.slack.blocks import alerts, review, signoff, waste
from bot.slack.render import Message, render
from bot.spend.messages import UnallocatedAlertMessage
from bot.waste.messages import WasteDigestMessage
from tests.unit.test_markup_safety import (
    AS_OF,
    VALID_USERS,
    alert_ctx,
    budget_status,
    decision_state,
    hostile,
    money,
    snapshot,
    waste_finding,
)

WEEK = "the week of Nov 9–15"


def cases(draw: Any) -> list[tuple[Message, tuple[str, list[dict[str, Any]]]]]:
    """Return one message of every kind with what its builder makes of the same values."""
    alert = BudgetAlert(budget_status(draw), draw(st.sampled_from([ACTUAL, FORECAST])), 80)
    ctx = alert_ctx(draw)
    baseline = Baseline(draw(money), draw(money), 14)
    anomaly = Anomaly("spend", draw(hostile(120)), AS_OF, draw(money), baseline, draw(money), "")
    lines = [(draw(hostile(200)), None, draw(money))]
    total = draw(money)
    findings = [waste_finding(draw)]
    owners = list(VALID_USERS)
    snap, state = snapshot(draw), decision_state(draw)
    week = dt.date(2026, 11, 16)
    return [
        (BudgetAlertMessage(alert, ctx), alerts.build_budget_alert(alert, ctx)),
        (AnomalyAlertMessage(anomaly, ctx), alerts.build_anomaly_alert(anomaly, ctx)),
        (
            UnallocatedAlertMessage(lines, total, WEEK, "EUR"),
            alerts.build_unallocated_alert(lines, total, WEEK, "EUR"),
        ),
        (
            WasteDigestMessage(findings, WEEK, owners, "EUR"),
            waste.build_waste_digest(findings, WEEK, owners, "EUR"),
        ),
        (
            ReviewParentMessage("2026-11", "ranking", [(snap, state)], "EUR"),
            review.build_review_parent_message("2026-11", "ranking", [(snap, state)], "EUR"),
        ),
        (
            ReviewItemMessage(snap, state, "EUR"),
            review.build_review_item_message(snap, state, "EUR"),
        ),
        (
            ReviewReminderMessage("2026-11", [("recsys", owners)], 5),
            review.build_reminder_message("2026-11", [("recsys", owners)], 5),
        ),
        (
            SignoffDigestMessage(owners[0], week, [snap], "EUR"),
            signoff.build_signoff_digest(owners[0], week, [snap], "EUR"),
        ),
    ]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_each_message_renders_as_its_builder_would(data: st.DataObject) -> None:
    for message, built in cases(data.draw):
        assert render(message) == built, type(message).__name__


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_planned_post_carries_the_message_rendered_at_delivery(data: st.DataObject) -> None:
    message, (text, blocks) = cases(data.draw)[0]
    post = planned_post("budget:1:2026-11:80", "budget_actual", "C0FINOPS", message, "parent")
    assert (post.dedupe_key, post.kind, post.channel, post.thread_key) == (
        "budget:1:2026-11:80",
        "budget_actual",
        "C0FINOPS",
        "parent",
    )
    assert post.message is message
    assert render(post.message) == (text, blocks)
