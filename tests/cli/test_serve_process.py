"""`mlcost serve` as a real process: it stops cleanly when asked to."""

from __future__ import annotations

from pathlib import Path

from tests.chaos.replicas import ServeProcess, wait_until
from tests.support.fake_slack import FakeSlack


def test_sigterm_stops_serve_cleanly_and_frees_the_scheduler_lead(
    fake_slack: FakeSlack, database_url: str, tmp_path: Path
) -> None:
    settings = {
        "MLCOST_DATABASE_URL": database_url,
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": "secret",
        "SLACK_API_URL": fake_slack.url,
        "MLCOST_LEADER_CHECK_SECONDS": "0.2",
    }
    first = ServeProcess.start("first", tmp_path, settings)
    try:
        first.wait_ready()
        wait_until(first.is_leader, 20, "the only replica to lead")
        # a container stop or systemd sends SIGTERM: the scheduler and chart workers stop, the
        # lead is released, and the exit code says all went well
        assert first.terminate() == 0, first.log()[-3000:]
        assert "Traceback" not in first.log()
        second = ServeProcess.start("second", tmp_path, settings)
        try:
            wait_until(second.is_leader, 30, "a new process to take the lead")
        finally:
            second.cleanup()
    finally:
        first.cleanup()
