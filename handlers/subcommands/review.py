"""`/mlcost review [YYYY-MM]`: post a month's kill-or-keep review to the team channels."""

from __future__ import annotations

from bot.counts import counted
from bot.errors import UsageError
from bot.periods import Period, month_of, month_period, previous_month
from bot.review.delivery import post_reviews
from bot.review.summary import may_post_reviews, review_status
from bot.slack.blocks.economics import month_title
from bot.slack.command_router import Invocation, Reply, subcommand
from bot.slack.middleware import unit_of_work_for
from bot.slack.mrkdwn import channel as mention_channel
from bot.slack.mrkdwn import escape
from bot.slack.permissions import team_owners_or_admins


def _month(inv: Invocation) -> Period:
    """Return the finished month to review (the last one unless named)."""
    if len(inv.args) > 1:
        raise UsageError("usage: `/mlcost review [YYYY-MM]`")
    month = month_period(inv.args[0]) if inv.args else previous_month(month_of(inv.now.date()))
    if month.end > inv.now.date():
        raise UsageError(f"{month.label} is not over yet; review a finished month")
    return month


# Posting calls Slack, so the review opens its own short transactions instead of the request's.
@subcommand(
    "review",
    usage="review [YYYY-MM]",
    example="/mlcost review 2026-11",
    permission=team_owners_or_admins,
    in_transaction=False,
)
def handle_review(inv: Invocation) -> Reply:
    """Post the monthly kill-or-keep review to each team's channel."""
    month = _month(inv)
    services = inv.services
    if services is None:
        raise UsageError("reviews can only be posted from the running app")
    unit_of_work = unit_of_work_for(services)
    teams = unit_of_work(lambda session: may_post_reviews(session, inv.user_id))
    report = post_reviews(
        session_factory=services.session_factory,
        edge=services.delivery_edge,
        month=month,
        settings=services.settings.review,
        now=inv.now,
        teams=teams,
    )
    status = [
        (r.team_name, r.channel, decided, total)
        for r, decided, total in unit_of_work(
            lambda session: review_status(session=session, month=month.label)
        )
        if teams is None or r.team_name in teams
    ]
    if not status:
        return Reply(text=f"No team had model spend in {month.label}: nothing to review.")
    opened = {key.rsplit(":", 1)[-1] for key in report.opened}
    lines = [
        f"• {escape(team)} in {mention_channel(channel)}: "
        + ("posted now" if team in opened else "already posted")
        + f", {decided} of {total} decided"
        for team, channel, decided, total in status
    ]
    if report.failed:
        lines.append(
            f":warning: {counted(len(report.failed), 'message')} not delivered yet; the review "
            "job retries them."
        )
    return Reply(text=f"*Review {month_title(month.label)}*\n" + "\n".join(lines))
