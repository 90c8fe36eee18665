"""The budget messages the poll plans: a threshold or forecast alert, and where it goes.

bot/slack/render.py turns each into Slack text and blocks when the outbox delivers it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.budgets.drivers import Drivers
from bot.budgets.plan import BudgetAlert
from bot.money import CostBasis


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
