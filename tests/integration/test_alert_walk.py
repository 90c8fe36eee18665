"""A month of synthetic spend, day by day with a frozen clock: exactly which alerts post when."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select

from bot.config import Settings
from bot.db.engine import session_scope
from bot.db.schema import OutboxMessage
from bot.poll.cycle import run_cycle
from bot.slack.notifier import Posted
from bot.slack.render import SlackRenderer
from tests.support.alert_walk import MONTH_START, add_spend, days, seed_walk, walk_day_rows
from tests.support.database import migrated
from tests.support.fake_notifier import FakeNotifier
from tests.support.outbox import delivery_edge

EXPECTED = {
    1: ["unallocated:2026-10-26"],
    5: ["budget:model:alpha:2026-11:forecast:100", "budget:team:platform:2026-11:forecast:100"],
    8: ["unallocated:2026-11-02"],
    10: ["anomaly:spend:model:beta:2026-11-10", "anomaly:spend:stage:training:2026-11-10"],
    14: ["budget:model:alpha:2026-11:actual:50"],
    15: ["unallocated:2026-11-09"],
    20: ["budget:model:beta:2026-11:actual:80"],
    22: ["budget:model:alpha:2026-11:actual:80", "unallocated:2026-11-16"],
    25: ["budget:model:alpha/stage:training:2026-11:actual:100"],
    26: ["budget:team:platform:2026-11:actual:100"],
    27: ["budget:stage:storage:2026-11:actual:80"],
    28: ["budget:model:alpha:2026-11:actual:100"],
    29: ["unallocated:2026-11-23"],
}
CHANNELS = {
    "budget:model:alpha": "C0ALPHA",
    "budget:model:alpha/stage:training": "C0ALPHA",
    "budget:model:beta": "C0RANKING",
    "budget:team:platform": "C0PLATFORM",
    "budget:stage:storage": "C0FINOPS",
    "unallocated": "C0FINOPS",
    "anomaly:spend:model:beta": "C0RANKING",
    "anomaly:spend:stage:training": "C0FINOPS",
}


@dataclass
class KeyedNotifier(FakeNotifier):
    """A fake notifier that also records each post's outbox key (from its metadata)."""

    keys: list[str] = field(default_factory=list)

    def post_with_metadata(
        self,
        channel: str,
        text: str,
        blocks: list[dict[str, Any]],
        thread_ts: str | None,
        metadata: dict[str, Any],
    ) -> Posted:
        posted = self.post(channel, text, blocks, thread_ts)
        self.keys.append(metadata["event_payload"]["key"])
        return posted


def test_a_month_day_by_day_posts_each_alert_once_on_the_right_day(database_url: str) -> None:
    settings = Settings(database_url=database_url)
    notifier = KeyedNotifier()
    posted_on: dict[int, list[str]] = {}
    with migrated(database_url) as (_engine, factory):
        seed_walk(factory)
        for day in days(MONTH_START, dt.date(2026, 12, 1)):
            with session_scope(factory) as session:
                add_spend(session, walk_day_rows(day))
            before = len(notifier.keys)
            # Billing for `day` is complete the next morning; polls run twice that day.
            for hour in (6, 18):
                now = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(hour), dt.UTC)
                report = run_cycle(
                    session_factory=factory,
                    settings=settings,
                    now=now,
                    edge=delivery_edge(notifier, renderer=SlackRenderer()),
                )
                assert report.as_of == day
                assert not report.unroutable
            if len(notifier.keys) > before:
                posted_on[day.day] = sorted(notifier.keys[before:])
        with session_scope(factory) as session:
            rows = session.execute(
                select(OutboxMessage.status, func.count()).group_by(OutboxMessage.status)
            )
            statuses = {status: count for status, count in rows}
    assert posted_on == EXPECTED
    assert len(notifier.keys) == len(set(notifier.keys))  # none twice
    assert statuses == {"delivered": sum(len(v) for v in EXPECTED.values())}
    for key, post in zip(notifier.keys, notifier.posts, strict=True):
        prefix = next(p for p in CHANNELS if key.startswith(p + ":"))
        assert post["channel"] == CHANNELS[prefix], key
    first_forecast = notifier.posts[notifier.keys.index("budget:model:alpha:2026-11:forecast:100")]
    assert "forecast $3,300 of $3,000 (110 %)" in first_forecast["text"]
    section = first_forecast["blocks"][1]["text"]["text"]
    assert "weekday pattern of the last 28 days" in section and "<@U0AAA111>" in section
    over = notifier.posts[notifier.keys.index("budget:model:alpha:2026-11:actual:100")]
    assert "*$80.00* past the 100 % line" in over["blocks"][1]["text"]["text"]
    assert "/mlcost model alpha" in str(over["blocks"])


def test_no_forecast_alert_in_the_first_days_even_when_the_run_rate_is_alarming(
    database_url: str,
) -> None:
    settings = Settings(database_url=database_url)
    with migrated(database_url) as (_engine, factory):
        seed_walk(factory)
        for day in days(MONTH_START, MONTH_START + dt.timedelta(days=5)):
            with session_scope(factory) as session:
                # alpha spends three times its usual: a forecast would scream from day one
                add_spend(
                    session,
                    [
                        {**r, "billed_cost": r["billed_cost"] * 3}
                        for r in walk_day_rows(day)
                        if r["model"] == "alpha"
                    ],
                )
        notifier = KeyedNotifier()
        for n in range(1, 6):
            now = dt.datetime(2026, 11, n + 1, 6, tzinfo=dt.UTC)
            run_cycle(
                session_factory=factory,
                settings=settings,
                now=now,
                edge=delivery_edge(notifier, renderer=SlackRenderer()),
                checks=("budgets",),
            )
            forecasts = [k for k in notifier.keys if ":forecast:" in k and "alpha" in k]
            assert bool(forecasts) == (n >= 5), (n, notifier.keys)
        assert "budget:model:alpha:2026-11:actual:50" in notifier.keys  # day 5: 5 × $330
