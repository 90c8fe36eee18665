"""`mlcost poll`: dry runs and backfills as of a day, one cycle that queues each alert once."""

from __future__ import annotations

import pytest

from bot.cli import main
from bot.db.engine import session_scope
from tests.support.alert_walk import MONTH_START, add_spend, days, seed_walk, walk_day_rows
from tests.support.database import migrated


def test_poll_as_of_a_day_dry_run_then_queue(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with migrated(database_url) as (_engine, factory):
        seed_walk(factory)
        with session_scope(factory) as session:
            add_spend(
                session,
                [
                    r
                    for d in days(MONTH_START, MONTH_START.replace(day=21))
                    for r in walk_day_rows(d)
                ],
            )
    db = ["--database-url", database_url]
    assert main([*db, "poll", "--as-of", "2026-11-20", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "as of 2026-11-20: 5 budgets evaluated, 5 alerts due (would post)" in out
    assert "C0ALPHA      model:alpha passed 50 % of its 2026-11 budget" in out
    assert ":warning:" not in out and "`" not in out  # terminal text, not Slack mrkdwn
    assert "queued" not in out
    assert main([*db, "poll", "--as-of", "2026-11-20"]) == 0
    out = capsys.readouterr().out
    assert "5 queued in the outbox" in out and "SLACK_BOT_TOKEN is not set" in out
    assert main([*db, "poll", "--as-of", "2026-11-20", "--dry-run"]) == 0
    assert "0 alerts due" in capsys.readouterr().out
    with migrated(database_url) as (_engine, factory), session_scope(factory) as session:
        add_spend(
            session,
            [
                r
                for d in days(MONTH_START.replace(day=21), MONTH_START.replace(day=23))
                for r in walk_day_rows(d)
            ],
        )
    assert main([*db, "poll", "--as-of", "2026-11-22", "--only", "budgets", "--dry-run"]) == 0
    assert "model:alpha passed 80 %" in capsys.readouterr().out
    assert main([*db, "poll", "--only", "budget"]) == 2
    assert "unknown check 'budget'" in capsys.readouterr().err
