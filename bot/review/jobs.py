"""Scheduled work of the review and sign-off loop; each job is safe to run every day.

`review_jobs` declares them (daily in MLCOST_TIMEZONE, and the refresh of review threads):

- `run_monthly_review_job`: from the first working day (Mon-Fri) of a month through the 7th,
  posts last month's review to every team once (later runs find it posted); a database that
  never had a review joins a round already under way only with MLCOST_REVIEW_CATCH_UP
  (`mlcost serve --catch-up`), else it waits for the next first working day;
- `run_review_reminders_job`: one reminder per review thread for models still undecided
  MLCOST_REVIEW_REMINDER_DAYS after the review opened; also retries review posts and chart
  uploads that failed;
- `run_weekly_signoff_job`: each owner's digest of last week (Mon-Sun) with a Sign-off
  button; the first run of a week sends it (Mondays, normally), later runs find it sent.

Exactly-once comes from the outbox's dedupe keys, not from the scheduler running once.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from bot.config import ReviewSettings
from bot.db.engine import session_scope
from bot.db.schema import Review
from bot.notify.delivery import DeliveryEdge, deliver_pending, outbox_timing
from bot.notify.outbox import Renderer
from bot.notify.schedule import DailyAt, Every, JobSpec
from bot.periods import Period, local_today, month_of, previous_month
from bot.review.delivery import ReviewPostReport, deliver_reviews, post_reviews
from bot.review.open import enqueue_reminders
from bot.review.refresh import refresh_pending_messages
from bot.review.signoff import SIGNOFF_KIND, enqueue_digests, week_start_of
from bot.slack.notifier import Notifier

log = logging.getLogger(__name__)

Clock = Callable[[], dt.datetime]

CATCH_UP_LAST_DAY = 7


def first_working_day(year: int, month: int) -> dt.date:
    """Return the first Monday-to-Friday day of the month."""
    day = dt.date(year, month, 1)
    while day.weekday() >= 5:
        day += dt.timedelta(days=1)
    return day


@dataclass(frozen=True)
class ReviewRound:
    """What the monthly review job does today: the month it posts (or None), in words."""

    month: Period | None
    description: str
    held: bool = False  # a round under way that a first start does not join


def review_round(
    *, session_factory: sessionmaker[Session], settings: ReviewSettings, today: dt.date
) -> ReviewRound:
    """Return the month whose review the job would post today, or why none.

    From the first working day to the 7th the job posts last month's review, so a restart
    catches up a round it missed. A database that never had a review (a first start) does not
    join a round already under way, unless MLCOST_REVIEW_CATCH_UP says so.
    """
    first_day = first_working_day(today.year, today.month)
    if not first_day <= today <= today.replace(day=CATCH_UP_LAST_DAY):
        return ReviewRound(None, "no monthly review today")
    month = previous_month(month_of(today))
    if today == first_day or settings.review_catch_up:
        return ReviewRound(month, f"monthly review of {month.label}")
    with session_scope(session_factory) as session:
        reviewed = session.scalar(select(Review.id).where(Review.month <= month.label).limit(1))
    if reviewed is not None:
        return ReviewRound(month, f"monthly review of {month.label} (catching up its round)")
    return ReviewRound(
        None,
        f"monthly review of {month.label} held: its round began {first_day.isoformat()}, before "
        "this database had any review (--catch-up or MLCOST_REVIEW_CATCH_UP=true posts it)",
        held=True,
    )


def run_monthly_review_job(
    *,
    session_factory: sessionmaker[Session],
    settings: ReviewSettings,
    clock: Clock,
    edge: DeliveryEdge,
) -> ReviewPostReport | None:
    """Post last month's review to every team from the month's first working day to the 7th."""
    today = local_today(clock(), settings.timezone)
    round_ = review_round(session_factory=session_factory, settings=settings, today=today)
    if round_.held:
        log.info("%s", round_.description)
    if round_.month is None:
        return None
    month = round_.month
    report = post_reviews(
        session_factory=session_factory, edge=edge, month=month, settings=settings, now=clock()
    )
    log.info(
        "review %s: opened %d, delivered %d, failed %d, charts %d",
        month.label,
        len(report.opened),
        len(report.delivered),
        len(report.failed),
        len(report.charts),
    )
    return report


def run_review_reminders_job(
    *,
    session_factory: sessionmaker[Session],
    settings: ReviewSettings,
    clock: Clock,
    edge: DeliveryEdge,
) -> int:
    """Remind each review thread once about undecided models; retry pending review posts."""
    now = clock()
    with session_scope(session_factory) as session:
        count = enqueue_reminders(
            session=session, now=now, after_days=settings.review_reminder_days
        )
    deliver_reviews(
        session_factory=session_factory,
        edge=edge,
        now=now,
        currency=settings.currency,
        timing=outbox_timing(settings),
    )
    return count


def signoff_week(today: dt.date) -> dt.date:
    """Return the Monday of the week whose digest the sign-off job sends today (last week)."""
    return week_start_of(today) - dt.timedelta(days=7)


def run_weekly_signoff_job(
    *,
    session_factory: sessionmaker[Session],
    settings: ReviewSettings,
    clock: Clock,
    edge: DeliveryEdge,
) -> int:
    """Send each owner last week's digest with Sign-off buttons, once per owner and week."""
    now = clock()
    week_start = signoff_week(local_today(now, settings.timezone))
    with session_scope(session_factory) as session:
        count = enqueue_digests(
            session=session,
            week_start=week_start,
            currency=settings.currency,
            now=now,
            max_data_age_days=settings.gate_max_data_age_days,
        )
    deliver_pending(
        session_factory=session_factory,
        edge=edge,
        kinds=(SIGNOFF_KIND,),
        timing=outbox_timing(settings),
    )
    return count


def run_review_refresh_job(
    *,
    session_factory: sessionmaker[Session],
    settings: ReviewSettings,
    notifier: Notifier,
    renderer: Renderer,
) -> int:
    """Update review threads whose decision was recorded while Slack could not be updated."""
    report = refresh_pending_messages(
        session_factory=session_factory,
        notifier=notifier,
        renderer=renderer,
        currency=settings.currency,
    )
    if report.refreshed or report.retrying or report.given_up:
        log.info(
            "review threads refreshed: %d, still pending: %d, refused by Slack: %d",
            len(report.refreshed),
            len(report.retrying),
            len(report.given_up),
        )
    return len(report.refreshed)


def describe_review(
    *, session_factory: sessionmaker[Session], settings: ReviewSettings, clock: Clock
) -> str:
    """Say which month's review the first run posts, or why none."""
    today = local_today(clock(), settings.timezone)
    return review_round(session_factory=session_factory, settings=settings, today=today).description


def describe_signoff(*, settings: ReviewSettings, clock: Clock) -> str:
    """Say which week's sign-off digests the first run sends."""
    week = signoff_week(local_today(clock(), settings.timezone))
    return f"weekly sign-off DMs for the week of {week} (once per owner)"


def review_jobs(
    settings: ReviewSettings,
    *,
    session_factory: sessionmaker[Session],
    clock: Clock,
    edge: DeliveryEdge,
) -> list[JobSpec]:
    """Declare the review and sign-off jobs; each decides for itself whether today is its day."""
    deps: dict[str, Any] = {
        "session_factory": session_factory,
        "settings": settings,
        "clock": clock,
        "edge": edge,
    }
    tz = settings.timezone
    return [
        JobSpec(
            "monthly-review",
            functools.partial(run_monthly_review_job, **deps),
            DailyAt(9, 0, tz),
            run_at_start=True,
            at_start=functools.partial(
                describe_review, session_factory=session_factory, settings=settings, clock=clock
            ),
        ),
        JobSpec(
            "review-reminders",
            functools.partial(run_review_reminders_job, **deps),
            DailyAt(10, 0, tz),
        ),
        JobSpec(
            "weekly-signoff",
            functools.partial(run_weekly_signoff_job, **deps),
            DailyAt(9, 30, tz),
            run_at_start=True,
            at_start=functools.partial(describe_signoff, settings=settings, clock=clock),
        ),
        JobSpec(
            "review-refresh",
            functools.partial(
                run_review_refresh_job,
                session_factory=session_factory,
                settings=settings,
                notifier=edge.notifier,
                renderer=edge.renderer,
            ),
            Every(dt.timedelta(seconds=settings.delivery_interval_seconds)),
        ),
    ]
