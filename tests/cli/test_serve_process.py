"""`mlcost serve` as a real process: one startup line, and it stops cleanly when asked to.

Docker and systemd stop a service with SIGTERM. Everything serve started (the chart-render
workers; multiprocessing's resource tracker follows within moments, as its pipe closes) must be
gone when it exits, or each stop leaves processes of about 130 MB behind.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.replicas import ServeProcess, wait_until
from tests.support.fake_slack import FakeSlack

STARTUP = re.compile(r"mlcost serve: Slack (?P<where>.+), as (?P<who>.+); scheduler: (?P<mode>.+)")


def process_group(pgid: int) -> dict[int, str]:
    """Return {pid: state} of every process in a process group (zombies included), from /proc."""
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its ')'
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid:
            found[int(entry)] = fields[0]
    return found


def live(pgid: int) -> dict[int, str]:
    return {pid: state for pid, state in process_group(pgid).items() if state != "Z"}


def named_bot(fake: FakeSlack) -> None:
    def auth_test(params: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "user_id": "UBOT",
            "user": "mlcost",
            "team_id": "T1",
            "team": "Acme",
            "bot_id": "B1",
        }

    fake.handlers["auth.test"] = auth_test


def settings_for(fake: FakeSlack, database_url: str) -> dict[str, str]:
    return {
        "MLCOST_DATABASE_URL": database_url,
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": "secret",
        "SLACK_API_URL": fake.url,
        "MLCOST_LEADER_CHECK_SECONDS": "0.2",
    }


def stopped_within(serve: ServeProcess, seconds: float) -> int | None:
    """Return serve's exit code, or fail with its log if it is still running after `seconds`.

    Stopping waits for requests under way (up to 5 s), the scheduler's running job and the
    chart workers: on a loaded 2-core machine that has taken more than 20 s.
    """
    try:
        return serve.process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        status = Path(f"/proc/{serve.process.pid}/status").read_text().splitlines()
        masks = [line for line in status if line.startswith(("Sig", "Shd"))]  # blocked, ignored
        serve.process.send_signal(signal.SIGUSR1)  # serve writes every thread's stack to its log
        time.sleep(2)
        pytest.fail(
            f"serve still running {seconds} s after the signal ({'; '.join(masks)}):\n"
            f"{serve.log()[-12000:]}"
        )


def startup_lines(process: ServeProcess) -> list[re.Match[str]]:
    return [m for m in map(STARTUP.search, process.log().splitlines()) if m]


def test_sigterm_stops_serve_and_everything_it_started(
    fake_slack: FakeSlack, migrated_database_url: str, tmp_path: Path
) -> None:
    named_bot(fake_slack)
    settings = settings_for(fake_slack, migrated_database_url)
    first = ServeProcess.start("first", tmp_path, settings)
    try:
        first.wait_ready()
        wait_until(first.is_leader, 20, "the only replica to lead")
        pid = first.process.pid
        # the render workers start with serve (not with the first chart), beside the tracker
        wait_until(lambda: len(live(pid)) >= 3, 20, "serve, its resource tracker and a worker")
        [line] = startup_lines(first)
        assert line["where"] == f"events on {first.url}slack/events (health on /healthz)"
        assert line["who"] == "@mlcost (UBOT) in Acme (T1)"
        assert line["mode"].startswith("leader")
        # what the scheduler does first, before it does it
        assert "; first, at once: poll (no MLCOST_POLL_SOURCES" in line["mode"]
        assert "anomaly check of" in line["mode"] and "weekly sign-off" in line["mode"]
        assert fake_slack.methods().count("auth.test") == 1

        # a second replica serves Slack and stands by while the first leads
        second = ServeProcess.start("second", tmp_path, settings)
        try:
            second.wait_ready()
            wait_until(lambda: startup_lines(second), 20, "the second replica's startup line")
            assert startup_lines(second)[0]["mode"].startswith("standby")

            # a container stop or systemd sends SIGTERM: the scheduler, the listener, the
            # chart workers and the resource tracker stop, the lead is released, exit code 0
            assert first.terminate() == 0, first.log()[-3000:]
            # multiprocessing's resource tracker exits by itself as serve's end of its pipe closes
            wait_until(lambda: process_group(pid) == {}, 5, "the resource tracker to follow serve")
            log = first.log()
            assert "Traceback" not in log
            assert "leaked semaphore" not in log
            assert "`token` will be unused" not in log  # Bolt's warning at every start
            wait_until(second.is_leader, 30, "the second process to take the lead")
        finally:
            second.cleanup()
    finally:
        first.cleanup()


def test_a_killed_serve_leaves_no_worker_behind(
    fake_slack: FakeSlack, migrated_database_url: str, tmp_path: Path
) -> None:
    serve = ServeProcess.start("killed", tmp_path, settings_for(fake_slack, migrated_database_url))
    try:
        serve.wait_ready()
        pid = serve.process.pid
        wait_until(lambda: len(live(pid)) >= 3, 20, "serve, its resource tracker and a worker")
        serve.kill()  # SIGKILL: no cleanup runs in serve itself
        # the workers notice they are orphans and exit; the tracker follows them
        wait_until(lambda: not live(pid), 20, "the workers and the tracker to exit")
    finally:
        serve.cleanup()


def test_sigterm_during_startup_still_exits_cleanly(
    fake_slack: FakeSlack, migrated_database_url: str, tmp_path: Path
) -> None:
    # Slack takes its time over auth.test: SIGTERM arrives while serve is checking the token
    fake_slack.delays["auth.test"] = 2.0
    serve = ServeProcess.start("early", tmp_path, settings_for(fake_slack, migrated_database_url))
    try:
        fake_slack.wait_for("auth.test", timeout=20)
        assert serve.terminate() == 0, serve.log()[-3000:]
        assert process_group(serve.process.pid) == {}
        assert "Traceback" not in serve.log()
        assert not startup_lines(serve)
    finally:
        serve.cleanup()


def test_serve_started_with_sigint_blocked_still_stops_on_it(
    fake_slack: FakeSlack, migrated_database_url: str, tmp_path: Path
) -> None:
    # a signal mask survives exec: started by a thread that blocked SIGINT, serve would keep it
    # pending forever (Ctrl-C did nothing) unless it unblocks what it stops on
    stopping = {signal.SIGINT, signal.SIGTERM}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, stopping)
    try:
        serve = ServeProcess.start(
            "blocked", tmp_path, settings_for(fake_slack, migrated_database_url)
        )
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    try:
        serve.wait_ready()
        assert "were blocked by the process that started serve" in serve.log()
        serve.process.send_signal(signal.SIGINT)
        assert stopped_within(serve, 30) == 0
        assert "stopping (interrupted)" in serve.log()
    finally:
        serve.cleanup()


def test_ctrl_c_in_a_terminal_stops_serve_without_worker_tracebacks(
    fake_slack: FakeSlack, migrated_database_url: str, tmp_path: Path
) -> None:
    serve = ServeProcess.start("ctrl-c", tmp_path, settings_for(fake_slack, migrated_database_url))
    try:
        serve.wait_ready()
        pid = serve.process.pid
        wait_until(lambda: len(live(pid)) >= 3, 20, "serve, its resource tracker and a worker")
        wait_until(lambda: "mlcost serve: Slack" in serve.log(), 30, "serve's last start line")
        # what an operator (or stopped_within) asks of a serve that hangs: every thread's stack,
        # each time it is asked; the main thread's stack among them, waiting for a signal. Twice
        # under a full parallel run no stack came within 10 s of one SIGUSR1, for a cause not
        # found (serve was up and past registering the dump): ask again each second, and show
        # serve's log if it never comes
        asked = [0.0]

        def main_thread_waits() -> bool:
            if "in wait_interruptibly" in serve.log():
                return True
            assert serve.alive(), f"serve exited with {serve.process.returncode}: {serve.log()}"
            if time.monotonic() - asked[0] > 1:  # the main thread may be a moment from waiting
                serve.process.send_signal(signal.SIGUSR1)
                asked[0] = time.monotonic()
            return False

        try:
            wait_until(main_thread_waits, 10, "the main thread's stack")
        except AssertionError as missing:
            raise AssertionError(f"{missing}; serve's log:\n{serve.log()[-4000:]}") from None
        # a terminal sends SIGINT to the whole foreground group, the workers included: they
        # leave stopping to serve rather than die with a KeyboardInterrupt traceback each
        os.killpg(pid, signal.SIGINT)
        assert stopped_within(serve, 30) == 0, serve.log()[-3000:]
        wait_until(lambda: process_group(pid) == {}, 5, "the resource tracker to follow serve")
        assert "Traceback" not in serve.log() and "KeyboardInterrupt" not in serve.log()
    finally:
        serve.cleanup()
