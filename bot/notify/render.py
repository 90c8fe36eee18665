"""The one step that renders planned messages with the Block Kit builders (bot/slack/blocks)."""

from __future__ import annotations

from typing import Any, assert_never

from sqlalchemy.orm import Session

from bot.notify.messages import (
    AnomalyAlertMessage,
    BudgetAlertMessage,
    Message,
    ReviewItemMessage,
    ReviewParentMessage,
    ReviewReminderMessage,
    SignoffDigestMessage,
    UnallocatedAlertMessage,
    WasteDigestMessage,
)
from bot.notify.outbox import PlannedPost, enqueue_many
from bot.slack.blocks.alerts import (
    build_anomaly_alert,
    build_budget_alert,
    build_unallocated_alert,
)
from bot.slack.blocks.review import (
    build_reminder_message,
    build_review_item_message,
    build_review_parent_message,
)
from bot.slack.blocks.signoff import build_signoff_digest
from bot.slack.blocks.waste import build_waste_digest


def render(message: Message) -> tuple[str, list[dict[str, Any]]]:
    """Return a planned message's Slack text and blocks."""
    match message:
        case BudgetAlertMessage():
            return build_budget_alert(message.alert, message.context)
        case AnomalyAlertMessage():
            return build_anomaly_alert(message.anomaly, message.context)
        case UnallocatedAlertMessage():
            return build_unallocated_alert(
                message.lines, message.total, message.week_label, message.currency
            )
        case WasteDigestMessage():
            return build_waste_digest(
                message.findings, message.week_label, message.owners, message.currency
            )
        case ReviewParentMessage():
            return build_review_parent_message(
                message.month, message.team, message.items, message.currency
            )
        case ReviewItemMessage():
            return build_review_item_message(message.snapshot, message.state, message.currency)
        case ReviewReminderMessage():
            return build_reminder_message(message.month, message.undecided, message.days)
        case SignoffDigestMessage():
            return build_signoff_digest(
                message.user_id, message.week_start, message.snapshots, message.currency
            )
        case _:
            assert_never(message)


def planned_post(
    dedupe_key: str, kind: str, channel: str, message: Message, thread_key: str | None = None
) -> PlannedPost:
    """Render a planned message into the post the outbox records."""
    text, blocks = render(message)
    return PlannedPost(dedupe_key, kind, channel, text, blocks, thread_key)


def enqueue_message(
    *,
    session: Session,
    dedupe_key: str,
    kind: str,
    channel: str,
    message: Message,
    thread_key: str | None = None,
) -> bool:
    """Render a message and record it in the outbox unless its key exists; return whether new."""
    post = planned_post(dedupe_key, kind, channel, message, thread_key)
    return bool(enqueue_many(session, [post]))
