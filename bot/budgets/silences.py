"""Acknowledge or snooze a budget's alerts: permission-checked, recorded with who and when.

A silence holds for the budget's current amount only (its amount revision): once the amount
changes, the new thresholds alert again until someone silences them.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.budgets.admin import check_budget_permission
from bot.db.schema import AlertSilence, AuditLog, Budget
from bot.errors import NotFoundError

SNOOZE_DAYS = 7


def find_budget(session: Session, scope: str) -> Budget:
    """Return the budget with this scope, or raise NotFoundError."""
    budget = session.scalars(select(Budget).where(Budget.scope == scope)).first()
    if budget is None:
        raise NotFoundError(f"There is no budget `{scope}` any more.")
    return budget


def acknowledge_budget(
    *, session: Session, user_id: str, scope: str, period: str, now: dt.datetime
) -> AlertSilence:
    """Silence a budget for the rest of the month (except being exceeded); audited."""
    return _silence(session, user_id, scope, period, now, kind="ack", until=None)


def snooze_budget(
    *,
    session: Session,
    user_id: str,
    scope: str,
    period: str,
    now: dt.datetime,
    days: int = SNOOZE_DAYS,
) -> AlertSilence:
    """Silence a budget's alerts for `days` days; audited."""
    until = now + dt.timedelta(days=days)
    return _silence(session, user_id, scope, period, now, kind="snooze", until=until)


def _silence(
    session: Session,
    user_id: str,
    scope: str,
    period: str,
    now: dt.datetime,
    *,
    kind: str,
    until: dt.datetime | None,
) -> AlertSilence:
    """Add a silence of the kind (`ack` or `snooze`) and its audit entry, if the user may."""
    budget = find_budget(session, scope)
    check_budget_permission(session, user_id, scope)
    silence = AlertSilence(
        budget_scope=scope,
        period=period,
        kind=kind,
        until=until,
        user_id=user_id,
        at=now,
        budget_revision=budget.amount_revision,
    )
    session.add(silence)
    detail = {"period": period}
    if until is not None:
        detail["until"] = until.isoformat()
    action = "budget.acknowledge" if kind == "ack" else "budget.snooze"
    session.add(AuditLog(at=now, actor=user_id, action=action, target=scope, detail=detail))
    session.flush()
    return silence


def budget_for_raise(*, session: Session, user_id: str, scope: str) -> tuple[Decimal, str, str]:
    """Check the user may change the budget; return its amount, currency and period (weekly)."""
    budget = find_budget(session, scope)
    check_budget_permission(session, user_id, scope)
    return budget.monthly_amount, budget.currency, budget.period
