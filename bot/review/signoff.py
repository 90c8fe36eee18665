"""Weekly owner sign-off: a digest per owner each Monday, a recorded sign-off per model and week."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from bot.db.schema import AuditLog, MLModel, SignOff, Team
from bot.economics.unit_costs import economics_for
from bot.errors import PermissionDenied, UsageError
from bot.notify.outbox import enqueue_message
from bot.periods import Period
from bot.registry.catalog import can_manage_model, find_model, model_owner_ids
from bot.review.messages import SignoffDigestMessage
from bot.spend.freshness import freshness_line, ledger_freshness

SIGNOFF_KIND = "signoff.digest"


def week_start_of(day: dt.date) -> dt.date:
    """Return the Monday of the day's week."""
    return day - dt.timedelta(days=day.weekday())


def week_period(week_start: dt.date) -> Period:
    """Return the Monday-to-Sunday week starting on week_start."""
    if week_start.weekday() != 0:
        raise UsageError(f"{week_start} is not a Monday")
    return Period(week_start, week_start + dt.timedelta(days=7), f"week of {week_start}")


def digest_key(week_start: dt.date, user_id: str) -> str:
    """Return the outbox key of an owner's digest for a week."""
    return f"signoff:{week_start.isoformat()}:{user_id}"


def enqueue_digests(
    *,
    session: Session,
    week_start: dt.date,
    currency: str,
    now: dt.datetime,
    max_data_age_days: int | None = None,
) -> int:
    """Enqueue each owner's digest of the week (once per owner and week); return how many.

    With `max_data_age_days`, a ledger that does not reach near the week's Sunday makes each
    digest say the data is stale (a week signed off on part of its spend is no all-clear).
    """
    week = week_period(week_start)
    stale = None
    if max_data_age_days is not None:
        sunday = week_start + dt.timedelta(days=6)
        stale = freshness_line(
            ledger_freshness(session=session, today=sunday, max_age_days=max_data_age_days)
        )
    before = week_period(week_start - dt.timedelta(days=7))
    models = session.scalars(
        select(MLModel)
        .where(MLModel.status == "active")
        .options(selectinload(MLModel.owners), selectinload(MLModel.team).selectinload(Team.owners))
        .order_by(MLModel.name)
    ).all()
    economics = economics_for(
        session=session,
        period=week,
        previous=before,
        models=[m.name for m in models],
        full_period=True,
        default_currency=currency,
    )
    by_owner: dict[str, list[str]] = defaultdict(list)
    for model in models:
        if model.name in economics and economics[model.name].current.cost > 0:
            for user in sorted(model_owner_ids(model)):
                by_owner[user].append(model.name)
    count = 0
    for user, names in sorted(by_owner.items()):
        snaps = [economics[name].as_json() for name in names]
        if enqueue_message(
            session=session,
            dedupe_key=digest_key(week_start, user),
            kind=SIGNOFF_KIND,
            channel=user,
            message=SignoffDigestMessage(user, week_start, snaps, currency, stale=stale),
        ):
            count += 1
    return count


def record_signoff(
    *, session: Session, model_name: str, week_start: dt.date, user_id: str, now: dt.datetime
) -> SignOff:
    """Record an owner's sign-off of a model's week (the first one counts); audited."""
    model = find_model(session, model_name)
    if not can_manage_model(session, user_id, model):
        raise PermissionDenied(f"Only the owners of `{model.name}` or an admin can sign it off.")
    week_period(week_start)
    existing = session.scalars(
        select(SignOff).where(SignOff.model_name == model.name, SignOff.week_start == week_start)
    ).first()
    if existing is not None:
        return existing
    signoff = SignOff(model_name=model.name, week_start=week_start, user_id=user_id, signed_at=now)
    try:
        with session.begin_nested():
            session.add(signoff)
            session.flush()
    except IntegrityError:  # signed by a co-owner a moment ago
        return session.scalars(
            select(SignOff).where(
                SignOff.model_name == model.name, SignOff.week_start == week_start
            )
        ).one()
    session.add(
        AuditLog(
            actor=user_id,
            action="signoff",
            target=f"model:{model.name}",
            detail={"week_start": week_start.isoformat()},
        )
    )
    session.flush()
    return signoff


def weeks_in(period: Period) -> list[dt.date]:
    """Return the Mondays that start a week inside the period."""
    day = period.start + dt.timedelta(days=(7 - period.start.weekday()) % 7)
    weeks = []
    while day + dt.timedelta(days=6) < period.end:
        weeks.append(day)
        day += dt.timedelta(days=7)
    return weeks


def signoff_counts(*, session: Session, period: Period) -> dict[str, tuple[int, int]]:
    """Return {model: (weeks signed off, weeks)} for the whole weeks inside the period."""
    weeks = weeks_in(period)
    if not weeks:
        return {}
    signed: dict[str, int] = defaultdict(int)
    for model, _week in session.execute(
        select(SignOff.model_name, SignOff.week_start).where(SignOff.week_start.in_(weeks))
    ):
        signed[model] += 1
    names = session.scalars(select(MLModel.name))
    return {name: (signed.get(name, 0), len(weeks)) for name in names}
