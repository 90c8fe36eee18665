"""Which budget alerts are due: thresholds crossed, forecasts, silences, dedupe keys (pure).

Each (budget, month, threshold) is alerted once. When spend jumps past several thresholds between
two evaluations only the highest is posted: it says everything the lower ones would have said.
Snooze silences a budget until a time; Acknowledge silences it for the rest of the month, except
that the budget being exceeded (a threshold of 100 % or more) is always posted.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from bot.budgets import BudgetStatus

ACTUAL = "actual"
FORECAST = "forecast"
EXCEEDED = 100


@dataclass(frozen=True)
class BudgetAlert:
    """A budget alert to post: `kind` is actual or forecast, `threshold` a percentage."""

    status: BudgetStatus
    kind: str
    threshold: int

    @property
    def dedupe_key(self) -> str:
        """Return the outbox key that makes this alert post once."""
        return budget_alert_key(
            self.status.scope, self.status.month.label, self.kind, self.threshold
        )


@dataclass(frozen=True)
class Silence:
    """The silences in force for one budget this month."""

    acknowledged_by: str | None = None
    snoozed_until: dt.datetime | None = None
    snoozed_by: str | None = None


def budget_alert_key(scope: str, period: str, kind: str, threshold: int) -> str:
    """Return `budget:<scope>:<YYYY-MM>:<kind>:<threshold>`."""
    return f"budget:{scope}:{period}:{kind}:{threshold}"


def parse_budget_alert_key(key: str) -> tuple[str, str, str, int] | None:
    """Split a budget alert key into (scope, period, kind, threshold), or None."""
    if not key.startswith("budget:"):
        return None
    parts = key[len("budget:") :].rsplit(":", 3)
    if len(parts) != 4 or not parts[3].isdigit():
        return None
    return parts[0], parts[1], parts[2], int(parts[3])


def sent_by_scope(keys: Iterable[str]) -> dict[str, set[tuple[str, int]]]:
    """Group alert keys already recorded into {scope: {(kind, threshold)}}."""
    sent: dict[str, set[tuple[str, int]]] = {}
    for key in keys:
        parsed = parse_budget_alert_key(key)
        if parsed is not None:
            sent.setdefault(parsed[0], set()).add((parsed[2], parsed[3]))
    return sent


def plan_budget_alerts(
    status: BudgetStatus,
    *,
    sent: set[tuple[str, int]],
    silence: Silence | None,
    now: dt.datetime,
) -> list[BudgetAlert]:
    """Return the alerts this budget is due (at most one actual and one forecast)."""
    alerts: list[BudgetAlert] = []
    crossed = [t for t in status.thresholds if status.reached(t)]
    if crossed:
        top = max(crossed)
        if not any(kind == ACTUAL and t >= top for kind, t in sent):
            alerts.append(BudgetAlert(status, ACTUAL, top))
    level = status.forecast_threshold
    if (
        status.forecast_enabled
        and status.forecast is not None
        and status.amount > 0
        and status.reached(level, status.forecast.amount)
        and not status.reached(level)
        and not any(kind == FORECAST for kind, _ in sent)
    ):
        alerts.append(BudgetAlert(status, FORECAST, level))
    if silence is None:
        return alerts
    if silence.snoozed_until is not None and silence.snoozed_until > now:
        return []
    if silence.acknowledged_by is not None:
        return [a for a in alerts if a.kind == ACTUAL and a.threshold >= EXCEEDED]
    return alerts
