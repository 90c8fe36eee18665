"""Scheduled work of the review and sign-off loop; each job is safe to run every day.

Register them daily (e.g. 09:00 in MLCOST_TIMEZONE) on the scheduler:

- `run_monthly_review_job(services)`: from the first working day (Mon-Fri) of a month through
  the 7th, posts last month's review to every team once (later runs find it posted);
- `run_review_reminders_job(services)`: one reminder per review thread for models still
  undecided MLCOST_REVIEW_REMINDER_DAYS after the review opened; also retries review posts
  and chart uploads that failed;
- `run_weekly_signoff_job(services)`: each owner's digest of last week (Mon-Sun) with a
  Sign-off button; the first run of a week sends it (Mondays, normally), later runs find it sent.

Exactly-once comes from the outbox's dedupe keys, not from the scheduler running once.
"""

from __future__ import annotations

import datetime as dt
import logging

from bot.bootstrap import AppServices
from bot.notify.delivery import deliver_pending, outbox_lease
from bot.periods import Period, local_today, month_of, previous_month
from bot.review.delivery import ReviewPostReport, deliver_reviews, post_reviews
from bot.review.open import enqueue_reminders
from bot.review.refresh import refresh_pending_messages
from bot.review.signoff import SIGNOFF_KIND, enqueue_digests, week_start_of

log = logging.getLogger(__name__)

CATCH_UP_LAST_DAY = 7


def first_working_day(year: int, month: int) -> dt.date:
    """Return the first Monday-to-Friday day of the month."""
    day = dt.date(year, month, 1)
    while day.weekday() >= 5:
        day += dt.timedelta(days=1)
    return day


def post_month_reviews(
    services: AppServices, month: Period, *, now: dt.datetime, teams: set[str] | None = None
) -> ReviewPostReport:
    """Post the month's reviews (to the teams given, else every team) with the app's services."""
    return post_reviews(
        session_factory=services.session_factory,
        notifier=services.notifier,
        month=month,
        settings=services.settings,
        now=now,
        find_posted=services.find_posted,
        teams=teams,
    )


def run_monthly_review_job(services: AppServices) -> ReviewPostReport | None:
    """Post last month's review to every team from the month's first working day to the 7th."""
    today = local_today(services.clock(), services.settings.timezone)
    if (
        not first_working_day(today.year, today.month)
        <= today
        <= today.replace(day=CATCH_UP_LAST_DAY)
    ):
        return None
    month = previous_month(month_of(today))
    report = post_month_reviews(services, month, now=services.clock())
    log.info(
        "review %s: opened %d, delivered %d, failed %d, charts %d",
        month.label,
        len(report.opened),
        len(report.delivered),
        len(report.failed),
        len(report.charts),
    )
    return report


def run_review_reminders_job(services: AppServices) -> int:
    """Remind each review thread once about undecided models; retry pending review posts."""
    now = services.clock()
    with services.unit_of_work() as session:
        count = enqueue_reminders(
            session=session, now=now, after_days=services.settings.review_reminder_days
        )
    deliver_reviews(
        session_factory=services.session_factory,
        notifier=services.notifier,
        now=now,
        find_posted=services.find_posted,
        currency=services.settings.currency,
        lease=outbox_lease(services.settings),
    )
    return count


def run_weekly_signoff_job(services: AppServices) -> int:
    """Send each owner last week's digest with Sign-off buttons, once per owner and week."""
    now = services.clock()
    week_start = week_start_of(local_today(now, services.settings.timezone)) - dt.timedelta(days=7)
    with services.unit_of_work() as session:
        count = enqueue_digests(
            session=session, week_start=week_start, currency=services.settings.currency, now=now
        )
    deliver_pending(
        session_factory=services.session_factory,
        notifier=services.notifier,
        find_posted=services.find_posted,
        kinds=(SIGNOFF_KIND,),
        lease=outbox_lease(services.settings),
    )
    return count


def run_review_refresh_job(services: AppServices) -> int:
    """Update review threads whose decision was recorded while Slack could not be updated."""
    report = refresh_pending_messages(
        session_factory=services.session_factory,
        notifier=services.notifier,
        currency=services.settings.currency,
    )
    if report.refreshed or report.retrying or report.given_up:
        log.info(
            "review threads refreshed: %d, still pending: %d, refused by Slack: %d",
            len(report.refreshed),
            len(report.retrying),
            len(report.given_up),
        )
    return len(report.refreshed)
