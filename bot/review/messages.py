"""The review messages: the monthly thread, its reminder, and the weekly sign-off digest."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

# a review's decisions and how they are labelled
DECISIONS = {
    "keep": "Keep",
    "kill": "Kill",
    "rightsize": "Right-size",
    "discuss": "Needs discussion",
}


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
