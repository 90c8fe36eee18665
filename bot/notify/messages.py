"""What the planners hand the notify layer: plain messages, rendered to Block Kit in one place.

Budget, anomaly, unallocated and waste alerts, review threads and sign-off digests are planned as
these values; bot/slack/render.py turns each into Slack text and blocks when it is recorded in
the outbox (or when a posted review message is updated).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from bot.budgets.drivers import Drivers
from bot.money import CostBasis

if TYPE_CHECKING:
    from bot.anomalies.detect import Anomaly
    from bot.budgets.plan import BudgetAlert
    from bot.economics.gate import GateResult
    from bot.waste.checks import WasteFinding
    from bot.waste.findings import ResourceEntry

# a review's decisions and how they are labelled
DECISIONS = {
    "keep": "Keep",
    "kill": "Kill",
    "rightsize": "Right-size",
    "discuss": "Needs discussion",
}


@dataclass(frozen=True)
class AlertContext:
    """Where an alert goes and what it can say beyond the numbers."""

    channel: str
    owners: frozenset[str] = frozenset()
    drivers: Drivers = field(default_factory=Drivers)
    currency: str = "USD"
    basis: CostBasis = CostBasis.BILLED


@dataclass(frozen=True)
class BudgetAlertMessage:
    """A budget threshold or forecast alert, for the budget's channel."""

    alert: BudgetAlert
    context: AlertContext


@dataclass(frozen=True)
class AnomalyAlertMessage:
    """An unusual day of a model's spend, for the model's channel."""

    anomaly: Anomaly
    context: AlertContext


@dataclass(frozen=True)
class UnallocatedAlertMessage:
    """A week's spend with no owner: (service, tag value, cost) lines, largest first."""

    lines: list[tuple[str, str | None, Decimal]]
    total: Decimal
    week_label: str
    currency: str


@dataclass(frozen=True)
class WasteDigestMessage:
    """One channel's weekly waste findings and who owns them.

    `resources`: the channel's open resource findings (each already posted there); `saved_total`
    what its `closed_count` closed resource findings saved so far.
    """

    findings: list[WasteFinding]
    week_label: str
    owners: list[str]
    currency: str = "USD"
    resources: list[ResourceEntry] = field(default_factory=list)
    saved_total: Decimal | None = None
    closed_count: int = 0
    stale: str | None = None  # the ledger did not reach the week's end (freshness_line)


@dataclass(frozen=True)
class DecisionState:
    """A review item's id and recorded decision, as the message shows it."""

    item_id: int
    decision: str | None = None
    decided_by: str | None = None
    decided_at: dt.datetime | None = None
    reason: str | None = None


@dataclass(frozen=True)
class ReviewParentMessage:
    """A team's monthly review: every model's snapshot with its decision."""

    month: str
    team: str
    items: list[tuple[dict[str, Any], DecisionState]]
    currency: str


@dataclass(frozen=True)
class ReviewItemMessage:
    """One model's message in a review thread."""

    snapshot: dict[str, Any]
    state: DecisionState
    currency: str


@dataclass(frozen=True)
class ReviewReminderMessage:
    """The one reminder in a review thread: (model, owners) still undecided after `days`."""

    month: str
    undecided: list[tuple[str, list[str]]]
    days: int


@dataclass(frozen=True)
class SignoffDigestMessage:
    """An owner's weekly digest of their models' week."""

    user_id: str
    week_start: dt.date
    snapshots: list[dict[str, Any]]
    currency: str
    stale: str | None = None  # the ledger did not reach the week's end (freshness_line)


@dataclass(frozen=True)
class ResourceDecisionState:
    """A resource finding's decision and its Stop it result, as the post shows them."""

    finding_id: int
    decision: str = "none"  # none | keep | not_waste | stop
    decided_by: str | None = None
    decided_at: dt.datetime | None = None
    keep_until: dt.datetime | None = None
    decision_monthly_cost: Decimal | None = None
    action_result: str | None = None


@dataclass(frozen=True)
class WasteResourceMessage:
    """One resource the scan found burning money, with Stop it / Keep for 7 days / Not waste.

    `details` is the finding as ResourceFinding.to_dict() gives it; `previous_monthly_cost` is
    set on a re-post (what the last post said), `why_again` says why it is posted again.
    """

    details: dict[str, Any]
    owners: list[str]
    state: ResourceDecisionState
    currency: str = "USD"
    post_number: int = 1
    previous_monthly_cost: Decimal | None = None
    why_again: str | None = None


@dataclass(frozen=True)
class WasteResourceReplyMessage:
    """A reply in a resource finding's thread: it closed (saved so far), or what Stop it did."""

    resource_id: str
    event: str  # "closed" | "action"
    text: str  # plain words (our template); rendered escaped
    user_id: str | None = None


@dataclass(frozen=True)
class WasteResourceSummaryLine:
    """One finding named in a summary post: its kind, resource, monthly cost and why."""

    kind: str
    resource_id: str
    monthly_cost: Decimal
    reason: str


@dataclass(frozen=True)
class WasteResourceSummaryMessage:
    """The findings of one channel a scan did not post one by one (over the day's cap)."""

    count: int
    total_monthly: Decimal
    top: list[WasteResourceSummaryLine]
    cap: int
    currency: str = "USD"


@dataclass(frozen=True)
class GateResultMessage:
    """The release gate's result for one model (`mlcost gate MODEL --post`), for its channel."""

    result: GateResult


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
