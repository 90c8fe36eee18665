"""A budget whose amount changes gets fresh thresholds for the month; an unchanged one does not."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from bot.budgets.admin import set_budget
from bot.budgets.silences import acknowledge_budget, snooze_budget
from bot.config import Settings
from bot.db.engine import session_scope
from bot.db.schema import OutboxMessage
from bot.poll.cycle import run_cycle
from bot.registry.spec import parse_registry
from bot.registry.sync import import_registry
from tests.support.alert_walk import add_spend, spend_row
from tests.support.database import migrated

REGISTRY = """\
teams:
  - {name: ranking, channel: C0RANKING, owners: [U0AAA111]}
models:
  - {name: alpha, team: ranking, owners: [U0AAA111], channel: C0ALPHA}
budgets:
  - {scope: "model:alpha", monthly: %s, thresholds: [80, 100]}
admins: [U0ADMIN01]
finops_channel: C0FINOPS
"""


def spend(factory: sessionmaker[Session], day: int, cost: str) -> None:
    with session_scope(factory) as session:
        add_spend(
            session, [spend_row(dt.date(2026, 11, day), "alpha", "training", "ranking", cost)]
        )


def cycle(factory: sessionmaker[Session], settings: Settings, day: int) -> list[str]:
    """Run the budget check the morning after `day`; return the keys it queued."""
    now = dt.datetime(2026, 11, day + 1, 7, tzinfo=dt.UTC)
    report = run_cycle(session_factory=factory, settings=settings, now=now, checks=("budgets",))
    return sorted(p.dedupe_key for p in report.planned)


def outbox_keys(factory: sessionmaker[Session]) -> list[str]:
    with session_scope(factory) as session:
        return sorted(session.scalars(select(OutboxMessage.dedupe_key)))


def raise_to(factory: sessionmaker[Session], amount: int) -> None:
    with session_scope(factory) as session:
        set_budget(session=session, user_id="U0AAA111", scope="model:alpha", amount=Decimal(amount))


def import_budget(factory: sessionmaker[Session], amount: int) -> None:
    with session_scope(factory) as session:
        import_registry(parse_registry(REGISTRY % amount), session=session, actor="test")


@contextmanager
def alpha_alerted_at_80_percent(
    database_url: str,
) -> Iterator[tuple[sessionmaker[Session], Settings]]:
    """Open a database where alpha's $1,000 budget reached 80 % on Nov 5 and was alerted."""
    settings = Settings(database_url=database_url)
    with migrated(database_url) as (_engine, factory):
        import_budget(factory, 1000)
        spend(factory, 5, "850")
        # an unchanged budget keeps today's key, so nothing already sent is sent again
        assert cycle(factory, settings, 5) == ["budget:model:alpha:2026-11:actual:80"]
        yield factory, settings


def test_raising_a_budget_gives_fresh_thresholds_for_the_month(database_url: str) -> None:
    with alpha_alerted_at_80_percent(database_url) as (factory, settings):
        raise_to(factory, 2000)
        assert cycle(factory, settings, 6) == []  # 850 is 42.5 % of the new amount
        spend(factory, 7, "850")
        assert cycle(factory, settings, 7) == ["budget:model:alpha:2026-11:actual:80:r1"]
        assert cycle(factory, settings, 7) == []
        assert cycle(factory, settings, 8) == []
        assert outbox_keys(factory) == [
            "budget:model:alpha:2026-11:actual:80",
            "budget:model:alpha:2026-11:actual:80:r1",
        ]


def test_changing_thresholds_only_keeps_the_keys(database_url: str) -> None:
    with alpha_alerted_at_80_percent(database_url) as (factory, settings):
        with session_scope(factory) as session:
            set_budget(
                session=session,
                user_id="U0AAA111",
                scope="model:alpha",
                amount=Decimal(1000),
                thresholds=[80, 90, 100],
            )
        assert cycle(factory, settings, 6) == []


def test_a_registry_import_that_changes_the_amount_gives_fresh_thresholds(
    database_url: str,
) -> None:
    with alpha_alerted_at_80_percent(database_url) as (factory, settings):
        import_budget(factory, 1000)  # the same file again changes nothing
        assert cycle(factory, settings, 6) == []
        import_budget(factory, 900)
        assert cycle(factory, settings, 6) == ["budget:model:alpha:2026-11:actual:80:r1"]
        assert cycle(factory, settings, 7) == []


def test_silences_of_the_old_amount_do_not_silence_the_new_one(database_url: str) -> None:
    """Acknowledge and Snooze apply to the amount they were given for; a new amount lifts them.

    Whoever raises a budget has decided what the month may cost: reaching the new thresholds is
    news. A silence given after the change silences the new amount as before.
    """
    with alpha_alerted_at_80_percent(database_url) as (factory, settings):
        with session_scope(factory) as session:
            now = dt.datetime(2026, 11, 6, 8, tzinfo=dt.UTC)
            acknowledge_budget(
                session=session, user_id="U0AAA111", scope="model:alpha", period="2026-11", now=now
            )
            snooze_budget(
                session=session,
                user_id="U0AAA111",
                scope="model:alpha",
                period="2026-11",
                now=now,
                days=30,
            )
        raise_to(factory, 2000)
        spend(factory, 7, "850")
        assert cycle(factory, settings, 7) == ["budget:model:alpha:2026-11:actual:80:r1"]
        raise_to(factory, 3000)
        with session_scope(factory) as session:
            now = dt.datetime(2026, 11, 8, 8, tzinfo=dt.UTC)
            snooze_budget(
                session=session, user_id="U0AAA111", scope="model:alpha", period="2026-11", now=now
            )
        spend(factory, 8, "800")  # 2500 of 3000: 83 %, snoozed until Nov 15
        assert cycle(factory, settings, 8) == []
        assert cycle(factory, settings, 15) == ["budget:model:alpha:2026-11:actual:80:r2"]
