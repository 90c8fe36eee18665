"""The one step that renders planned messages with the Block Kit builders (bot/slack/blocks).

The composition root (bot/bootstrap.py) hands SlackRenderer to the outbox's delivery and to what
updates a posted message; domain code never imports this module.
"""

from __future__ import annotations

from typing import Any, assert_never, get_args

from bot.anomalies.messages import AnomalyAlertMessage
from bot.budgets.messages import BudgetAlertMessage
from bot.economics.messages import GateResultMessage
from bot.review.messages import (
    ReviewItemMessage,
    ReviewParentMessage,
    ReviewReminderMessage,
    SignoffDigestMessage,
)
from bot.slack.blocks.alerts import (
    build_anomaly_alert,
    build_budget_alert,
    build_unallocated_alert,
)
from bot.slack.blocks.gate import build_gate_blocks
from bot.slack.blocks.review import (
    build_reminder_message,
    build_review_item_message,
    build_review_parent_message,
)
from bot.slack.blocks.signoff import build_signoff_digest
from bot.slack.blocks.waste import build_waste_digest
from bot.slack.blocks.waste_resource import (
    build_waste_resource_message,
    build_waste_resource_reply,
    build_waste_resource_summary,
)
from bot.spend.messages import UnallocatedAlertMessage
from bot.waste.messages import (
    WasteDigestMessage,
    WasteResourceMessage,
    WasteResourceReplyMessage,
    WasteResourceSummaryMessage,
)

Message = (
    BudgetAlertMessage
    | AnomalyAlertMessage
    | UnallocatedAlertMessage
    | WasteDigestMessage
    | ReviewParentMessage
    | ReviewItemMessage
    | ReviewReminderMessage
    | SignoffDigestMessage
    | WasteResourceMessage
    | WasteResourceReplyMessage
    | WasteResourceSummaryMessage
    | GateResultMessage
)


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
                message.findings,
                message.week_label,
                message.owners,
                message.currency,
                message.resources,
                message.saved_total,
                message.closed_count,
                message.stale,
            )
        case GateResultMessage():
            return build_gate_blocks(message.result)
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
                message.user_id,
                message.week_start,
                message.snapshots,
                message.currency,
                stale=message.stale,
            )
        case WasteResourceMessage():
            return build_waste_resource_message(
                message.details,
                message.owners,
                message.state,
                message.currency,
                message.post_number,
                message.previous_monthly_cost,
                message.why_again,
            )
        case WasteResourceReplyMessage():
            return build_waste_resource_reply(
                message.resource_id, message.event, message.text, message.user_id
            )
        case WasteResourceSummaryMessage():
            return build_waste_resource_summary(
                message.count, message.total_monthly, message.top, message.cap, message.currency
            )
        case _:
            assert_never(message)


MESSAGE_TYPES: dict[str, type] = {cls.__name__: cls for cls in get_args(Message)}


class SlackRenderer:
    """The outbox's Renderer: each message type by name, rendered with the Block Kit builders."""

    def __call__(self, message: Any) -> tuple[str, list[dict[str, Any]]]:
        return render(message)

    def message_type(self, name: str) -> type:
        """Return the message class an outbox row names."""
        return MESSAGE_TYPES[name]
