"""The waste messages: the weekly digest, and a resource finding's post, replies and summary."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from bot.waste.checks import WasteFinding
from bot.waste.findings import ResourceEntry


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
