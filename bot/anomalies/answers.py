"""Owners answer an anomaly post: Expected or Not expected, recorded once, audited.

Expected accepts the anomaly's top driver (bot/anomalies/drivers.py) up to the spend it reached
that day, for the rest of the calendar month: later days whose rise comes from it are not
anomalies (bot/anomalies/detect.py takes the accepted spend off before judging). Not expected
records the answer and keeps the anomaly open for the owners to look into. Each post is
answered once: the first answer is recorded (one insert on the post's key, whoever wins a race);
any later click, retry or double click records nothing and is shown the answer that stands.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, cast

from sqlalchemy import Table, select
from sqlalchemy.orm import Session

from bot.anomalies.detect import (
    EXPECTED,
    GPU_HOURS,
    NOT_EXPECTED,
    ZERO,
    baseline_history,
    scope_drivers,
)
from bot.anomalies.drivers import Driver
from bot.db.engine import dialect_insert
from bot.db.schema import AnomalyExpectation, AuditLog
from bot.errors import PermissionDenied, UsageError
from bot.money import CostBasis
from bot.registry.catalog import can_manage_model, find_model, is_admin, model_owner_ids

ANSWERS = (EXPECTED, NOT_EXPECTED)
AUDIT_ACTIONS = {EXPECTED: "anomaly.expected", NOT_EXPECTED: "anomaly.not_expected"}


@dataclass(frozen=True)
class AnomalyRef:
    """Which anomaly a post is about, from its outbox key `anomaly:KIND:SCOPE:DAY`."""

    key: str
    kind: str
    scope: str
    day: dt.date

    @property
    def month(self) -> str:
        """Return the anomaly's month, YYYY-MM."""
        return self.day.strftime("%Y-%m")


def parse_anomaly_key(key: str) -> AnomalyRef:
    """Return the anomaly a post key names, or raise UsageError."""
    head, _, rest = key.partition(":")
    kind, _, rest = rest.partition(":")
    scope, _, day = rest.rpartition(":")
    try:
        parsed = dt.date.fromisoformat(day)
    except ValueError:
        parsed = None
    if (
        head != "anomaly"
        or not kind
        or parsed is None
        or scope.partition(":")[0]
        not in (
            "model",
            "stage",
        )
    ):
        raise UsageError("That button does not name an anomaly; nothing was changed.")
    return AnomalyRef(key, kind, scope, parsed)


def parse_amount(text: Any) -> Decimal:
    """Return a button's amount as Decimal, or raise UsageError."""
    try:
        value = Decimal(str(text))
    except InvalidOperation:
        value = Decimal("NaN")
    if not value.is_finite():
        raise UsageError("That button carries no amount; nothing was changed.")
    return value


@dataclass(frozen=True)
class Answer:
    """The answer that stands for a post, and whether this click recorded it."""

    row: AnomalyExpectation
    recorded: bool
    owners: list[str]  # the scope's owners, to mention when it is not expected


def check_can_answer(session: Session, user_id: str, scope: str) -> list[str]:
    """Return the scope's owners if the user may answer for it; raise PermissionDenied if not.

    A model's anomaly: its owners, its team's owners, admins. A stage's (organisation-wide):
    admins only.
    """
    kind, _, name = scope.partition(":")
    if kind == "model":
        model = find_model(session, name)
        owners = sorted(model_owner_ids(model) | {o.user_id for o in model.team.owners})
        if can_manage_model(session, user_id, model):
            return sorted(model_owner_ids(model))
        named = " ".join(f"<@{u}>" for u in owners) or "nobody is named"
        raise PermissionDenied(
            f"Only the owners of {model.name} ({named}) or an admin can answer its anomalies. "
            "Nothing was changed."
        )
    if is_admin(session, user_id):
        return []
    raise PermissionDenied(
        "Only an admin can answer an organisation-wide stage anomaly. Nothing was changed."
    )


def answer_anomaly(
    *,
    session: Session,
    key: str,
    answer: str,
    user_id: str,
    amount: Decimal,
    excess: Decimal,
    now: dt.datetime,
    basis: CostBasis = CostBasis.BILLED,
    currency: str = "USD",
) -> Answer:
    """Record Expected or Not expected for an anomaly post (owners and admins), once; audited."""
    if answer not in ANSWERS:
        raise UsageError(f"not an answer: {answer}")
    ref = parse_anomaly_key(key)
    owners = check_can_answer(session, user_id, ref.scope)
    standing = find_answer(session, key)
    if standing is not None:
        return Answer(standing, recorded=False, owners=owners)
    driver = _top_driver(session, ref, basis, currency)
    if ref.kind == "gpu":  # the model's GPU-hours themselves, up to that day's
        driver = Driver(GPU_HOURS, ref.scope.partition(":")[2], amount, ZERO)
    table = cast(Table, AnomalyExpectation.__table__)
    values = {
        "anomaly_key": key,
        "kind": ref.kind,
        "scope": ref.scope,
        "answer": answer,
        "month": ref.month,
        "anomaly_day": ref.day,
        "amount": amount,
        "excess": excess,
        "dimension": driver.dimension if driver else None,
        "value": driver.value if driver else None,
        "level": driver.amount if driver else None,
        "usual": driver.usual if driver else None,
        "currency": currency,
        "user_id": user_id,
        "at": now,
    }
    inserted = session.execute(
        dialect_insert(session)(table)
        .values(**values)
        .on_conflict_do_nothing(index_elements=["anomaly_key"])
        .returning(table.c.id)
    ).scalar()
    row = find_answer(session, key)
    assert row is not None  # inserted now, or by the click that won the race
    if inserted is None:
        return Answer(row, recorded=False, owners=owners)
    session.add(
        AuditLog(
            at=now,
            actor=user_id,
            action=AUDIT_ACTIONS[answer],
            target=ref.scope,
            detail={
                "anomaly": key,
                "day": ref.day.isoformat(),
                "amount": str(amount),
                "excess": str(excess),
                "currency": currency,
                "before": None,
                "after": _after(row),
            },
        )
    )
    session.flush()
    return Answer(row, recorded=True, owners=owners)


def _after(row: AnomalyExpectation) -> dict[str, Any]:
    """The answer as the audit trail shows it: what was accepted, up to what, until when."""
    after: dict[str, Any] = {"answer": row.answer}
    if row.dimension is not None:
        after["driver"] = f"{row.dimension}={row.value}"
    if row.answer == EXPECTED and row.level is not None:
        after["up_to"] = str(row.level)
        after["month"] = row.month
    return after


def find_answer(session: Session, key: str) -> AnomalyExpectation | None:
    """Return the answer recorded for an anomaly post, if any."""
    return session.scalars(
        select(AnomalyExpectation).where(AnomalyExpectation.anomaly_key == key)
    ).first()


def _top_driver(
    session: Session, ref: AnomalyRef, basis: CostBasis, currency: str
) -> Driver | None:
    """Return the anomaly's top driver as the ledger has it now (spend anomalies only)."""
    if ref.kind != "spend":
        return None
    drivers = scope_drivers(
        session=session,
        scope=ref.scope,
        day=ref.day,
        history=baseline_history(session, day=ref.day, currency=currency),
        basis=basis,
        currency=currency,
    )
    return drivers[0] if drivers else None
