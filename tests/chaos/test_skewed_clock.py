"""Leases by the database's clock: a poller whose host clock runs ahead doubles nothing.

Found by hand on a slow Slack: one poller whose clock ran 5 minutes ahead doubled 37 of 37
posts. It claimed with its own clock, so every lease another process held (taken by that
process's clock, 30 s long) had already run out for it; it re-claimed the message being posted,
looked for it in the channel (not there yet: Slack had not answered) and posted it again.

Two real `mlcost poll` processes deliver one outbox through a slow Slack; the second one's clock
(the composition root's, as on a drifted host) is 5 minutes ahead.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.db.engine import make_engine, make_session_factory, session_scope, upgrade
from bot.db.schema import OutboxMessage
from bot.notify.outbox import PlannedPost, PreRendered, enqueue_many
from tests.chaos.chaos_slack import ChaosSlack, FaultPlan
from tests.chaos.replicas import ROOT, mlcost_executable, serve_env, wait_until
from tests.support.fake_slack import FakeSlack

pytestmark = [pytest.mark.chaos, pytest.mark.xdist_group("serve")]

POSTS = 8
SLOW_POST = 2.0  # seconds Slack takes to act on and answer each chat.postMessage
SKEW = 300  # the second poller's clock runs 5 minutes ahead


def test_a_poller_whose_clock_runs_ahead_doubles_no_post(database_url: str, tmp_path: Path) -> None:
    engine = make_engine(database_url)
    upgrade(engine)
    factory = make_session_factory(engine)
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "alert"}}]
    with session_scope(factory) as session:
        enqueue_many(
            session,
            [
                PlannedPost(f"skew:{i}", "test", "C0ALERTS", PreRendered(f"alert {i}", blocks))
                for i in range(POSTS)
            ],
        )
    fake = FakeSlack().start()
    proxy = ChaosSlack(
        fake.url, FaultPlan(0, rate_limited=0, server_error=0, timeout=0), 10.0
    ).start()
    proxy.slow["chat.postMessage"] = SLOW_POST
    env = serve_env(
        {
            "MLCOST_DATABASE_URL": database_url,
            "SLACK_BOT_TOKEN": "xoxb-skew",
            "SLACK_API_URL": proxy.url,
            "MLCOST_SLACK_TIMEOUT_SECONDS": "10",
            "MLCOST_OUTBOX_LEASE_SECONDS": "30",  # longer than any post here takes
            "MLCOST_TIMEZONE": "UTC",
            "PYTHONPATH": str(ROOT),
        }
    )
    poll = ["poll", "--no-fetch"]
    ahead = [sys.executable, "-m", "tests.chaos.skewed_clock", str(SKEW), *poll]
    processes: list[subprocess.Popen[bytes]] = []
    try:
        processes.append(_start([*mlcost_executable(), *poll], tmp_path / "on-time.log", env))
        # the on-time poller has a post in flight (its first one answered, the next one slow)
        wait_until(lambda: fake.calls_to("chat.postMessage"), 30, "the first post")
        processes.append(_start(ahead, tmp_path / "ahead.log", env))
        codes = [p.wait(timeout=120) for p in processes]
        logs = {p.name: p.read_text() for p in tmp_path.glob("*.log")}
        assert codes == [0, 0], logs
        doubled = {k: n for k, n in Counter(m.key for m in proxy.posted).items() if n > 1}
        assert doubled == {}, logs
        with session_scope(factory) as session:
            rows = session.scalars(select(OutboxMessage)).all()
            assert {r.dedupe_key: r.status for r in rows} == {
                f"skew:{i}": "delivered" for i in range(POSTS)
            }
        assert len(proxy.posted) == POSTS
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
        proxy.stop()
        fake.stop()
        engine.dispose()


def _start(argv: list[str], log_path: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            argv, cwd=log_path.parent, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    return process
