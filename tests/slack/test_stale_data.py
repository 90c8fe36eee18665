"""`/mlcost model|team|waste|gate` and the weekly waste digest on a ledger no longer fed."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.schema import IngestionRun, OutboxMessage
from bot.notify.routing import Router
from bot.poll.plan import plan_waste_posts
from bot.review.signoff import enqueue_digests
from tests.slack.test_report_commands import all_text
from tests.support.economics_seed import REGISTRY, add_spend, seed_review_month
from tests.support.outbox import rendered
from tests.support.sample_registry import load_registry
from tests.support.slack_app import SlackHarness, seed
from tests.support.waste_surfaces import seed_all

# a source name nobody should trust: it reaches Slack escaped
SOURCE = "focus <!channel>"
LAST_DAY = dt.date(2026, 11, 30)


class Clock:
    """A clock the test sets."""

    def __init__(self) -> None:
        self.at = dt.datetime(2026, 12, 20, 12, 0, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.at


@pytest.fixture
def clock() -> Clock:
    return Clock()


def seed_until_november(session: Session) -> None:
    """recsys (team ranking) spends every day of November 2026, fed by one ingestion."""
    load_registry(session, REGISTRY)
    run = IngestionRun(source=SOURCE, location="billing.csv", status="succeeded")
    session.add(run)
    session.flush()
    for back in range(30):
        day = LAST_DAY - dt.timedelta(days=back)
        add_spend(session, "recsys", "ranking", "serving", day, "20", "i-recsys", run=run)
    session.flush()


STALE = "Stale data, no all-clear:"


@pytest.mark.usefixtures("tiny_charts")
def test_model_and_team_say_the_data_is_stale_and_name_the_source(
    slack: SlackHarness, clock: Clock
) -> None:
    seed(slack, seed_until_november)
    for command in ("model recsys", "team ranking", "waste", "gate recsys"):
        assert slack.command(command, channel="C0RANKING").status == 200
        reply = slack.responses(1)[0]
        text = all_text(reply["blocks"])
        assert "2026-11-30, 20 days before 2026-12-20" in text, command
        assert "fed by focus &lt;!channel&gt; (up to 2026-11-30)" in text, command
        assert "<!channel>" not in text + reply["text"], command
        if command == "waste":
            assert "nothing found" not in text and "no verdict" in text
        if command == "gate recsys":
            assert "could not evaluate" in reply["text"] and "passes" not in reply["text"]
        else:
            assert STALE in text, command
        slack.fake.calls.clear()
    clock.at = dt.datetime(2026, 12, 2, 12, 0, tzinfo=dt.UTC)  # two days: billing delay
    for command in ("model recsys", "team ranking", "waste"):
        assert slack.command(command, channel="C0RANKING").status == 200
        reply = slack.responses(1)[0]
        assert STALE not in all_text(reply["blocks"]), command
        slack.fake.calls.clear()


def test_the_weekly_waste_digest_says_the_week_was_not_covered(session: Session) -> None:
    seed_all(session)  # the ledger ends Monday Nov 30; open resource findings in three channels
    settings = Settings()
    router = Router(session)
    fresh, _ = plan_waste_posts(
        session=session, settings=settings, as_of=dt.date(2026, 12, 1), router=router
    )
    assert fresh and all(STALE not in all_text(rendered(post)[1]) for post in fresh)
    # two weeks on, nothing was ingested: the week of Dec 7-13 has no ledger data at all
    stale, _ = plan_waste_posts(
        session=session, settings=settings, as_of=dt.date(2026, 12, 15), router=router
    )
    assert stale
    for post in stale:
        shown = all_text(rendered(post)[1])
        assert STALE in shown and "2026-11-30, 13 days before 2026-12-13" in shown


def test_the_weekly_signoff_digest_says_the_week_was_not_covered(session: Session) -> None:
    load_registry(session, REGISTRY)
    seed_review_month(session)  # October and November 2026: the ledger ends Monday Nov 30
    now = dt.datetime(2026, 12, 7, 9, 0, tzinfo=dt.UTC)
    for week_start in (dt.date(2026, 11, 23), dt.date(2026, 11, 30)):
        assert enqueue_digests(
            session=session, week_start=week_start, currency="USD", now=now, max_data_age_days=3
        )
    digests = {
        m.dedupe_key.split(":")[1]: json.dumps(rendered(m))
        for m in session.scalars(select(OutboxMessage).where(OutboxMessage.channel == "U0AAA111"))
    }
    assert STALE not in digests["2026-11-23"]  # the ledger reaches that Sunday
    assert STALE in digests["2026-11-30"]  # one day of seven: signing it off signs off nothing
    assert "2026-11-30, 6 days before 2026-12-06" in digests["2026-11-30"]


@pytest.mark.usefixtures("tiny_charts")
def test_the_notification_text_says_stale_data_once(slack: SlackHarness, clock: Clock) -> None:
    seed(slack, seed_until_november)
    for command in ("model recsys", "team ranking"):
        assert slack.command(command, channel="C0RANKING").status == 200
        text = slack.responses(1)[0]["text"]
        assert text.lower().count("stale data") == 1, text
        assert "Stale data: the ledger's newest day is 2026-11-30" in text, text
        slack.fake.calls.clear()
