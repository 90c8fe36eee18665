"""Which budget alerts are due: thresholds crossed, forecasts, silences, dedupe keys (pure).

Each (budget amount, period, threshold) is alerted once: the key names the budget's period (the
month `2026-11`, or a letter and the first day of a day, week or quarter: `w2026-11-23`), so a
threshold alerts once in each period and again in the next. A budget whose amount or period
changes (raised from an alert, `/mlcost budget set`, a registry import) starts a new revision,
and its thresholds are alerted afresh for the period. Keys of revision 0 (an amount never
changed) have no revision suffix, as before revisions existed, so nothing already posted is
posted again. When spend jumps past several thresholds between two evaluations only the
highest is posted: it says everything the lower ones would have said.
Snooze silences a budget until a time; Acknowledge silences it for the rest of the period, except
that the budget being exceeded (a threshold of 100 % or more) is always posted. Both silence the
revision they were given for: a changed amount is news again.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bot.budgets.evaluate import BudgetStatus

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
            self.status.scope,
            self.status.month.label,
            self.kind,
            self.threshold,
            self.status.revision,
        )


@dataclass(frozen=True)
class Silence:
    """The silences in force for one budget this period."""

    acknowledged_by: str | None = None
    snoozed_until: dt.datetime | None = None
    snoozed_by: str | None = None


_KEY = re.compile(
    r"budget:(?P<scope>.+):(?P<period>\d{4}-\d{2}|[dwq]\d{4}-\d{2}-\d{2}):(?P<kind>[a-z]+)"
    r":(?P<threshold>\d+)"
    r"(?::r(?P<revision>\d+))?"
)


def budget_alert_key(scope: str, period: str, kind: str, threshold: int, revision: int = 0) -> str:
    """Return `budget:<scope>:<period>:<kind>:<threshold>`, plus `:r<n>` from revision 1 on.

    The period is the budget period's label: `2026-11` for a month, `w2026-11-23` for the week
    starting that Monday, `d2026-11-23` for a day, `q2026-10-01` for a quarter.
    """
    key = f"budget:{scope}:{period}:{kind}:{threshold}"
    return f"{key}:r{revision}" if revision else key


def _parse(key: str) -> tuple[str, str, str, int, int] | None:
    match = _KEY.fullmatch(key)
    if match is None:
        return None
    return (
        match["scope"],
        match["period"],
        match["kind"],
        int(match["threshold"]),
        int(match["revision"] or 0),
    )


def parse_budget_alert_key(key: str) -> tuple[str, str, str, int] | None:
    """Split a budget alert key into (scope, period, kind, threshold), or None."""
    parsed = _parse(key)
    return None if parsed is None else parsed[:4]


def budget_alert_revision(key: str) -> int | None:
    """Return the budget amount revision a budget alert key belongs to, or None."""
    parsed = _parse(key)
    return None if parsed is None else parsed[4]


def sent_by_scope(
    keys: Iterable[str],
    revisions: Mapping[str, int] | None = None,
    periods: Mapping[str, str] | None = None,
) -> dict[str, set[tuple[str, int]]]:
    """Group alert keys already recorded into {scope: {(kind, threshold)}}.

    Only keys of each scope's current amount revision (`revisions`, 0 when absent) count, and,
    given `periods` (each scope's current period label), only keys of that period.
    """
    sent: dict[str, set[tuple[str, int]]] = {}
    for key in keys:
        parsed = _parse(key)
        if parsed is None:
            continue
        scope, period, kind, threshold, revision = parsed
        if periods is not None and periods.get(scope) != period:
            continue
        if revision == (revisions or {}).get(scope, 0):
            sent.setdefault(scope, set()).add((kind, threshold))
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
        and status.forecast.amount is not None  # none without enough history: nothing to alert
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
