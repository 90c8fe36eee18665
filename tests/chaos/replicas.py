"""Real `mlcost serve` processes for tests: started, watched through their logs, killed."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ELECTED = "elected scheduler leader"
DEMOTED = "lost the scheduler lead"


def mlcost_executable() -> list[str]:
    """Return the command that runs this checkout's `mlcost` (its .venv's, else this Python's)."""
    script = Path(sys.executable).with_name("mlcost")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "bot.cli"]


def free_port() -> int:
    """Return a TCP port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(
    check: Callable[[], object], timeout: float, what: str, *, every: float = 0.05
) -> None:
    """Poll `check` until it returns something true; fail naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def serve_env(settings: dict[str, str]) -> dict[str, str]:
    """The environment of a serve process: this one without Slack/mlcost settings, plus these."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "MLCOST_", "AWS_"))}
    env.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(settings)
    return env


def _default_sigint() -> None:
    """In the child, before exec: SIGINT does what it does by default (Python raises
    KeyboardInterrupt), whatever the test runner inherited."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass
class ServeProcess:
    """One `mlcost serve --http` process; its stderr goes to a log file."""

    name: str
    port: int
    log_path: Path
    process: subprocess.Popen[bytes]
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def start(
        cls, name: str, workdir: Path, settings: dict[str, str], *options: str
    ) -> ServeProcess:
        """Start `mlcost serve` on a free port, in its own process group, from `workdir`."""
        port = free_port()
        log_path = workdir / f"{name}.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                [
                    *mlcost_executable(),
                    "serve",
                    "--http",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    *options,
                ],
                cwd=workdir,
                env=serve_env(settings),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its chart workers share its group, for cleanup
                # the tests send SIGINT: a runner started as a background job (`cmd &` in a
                # script) ignores it, and an ignored signal stays ignored through exec
                preexec_fn=_default_sigint,
            )
        return cls(name, port, log_path, process)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def is_leader(self) -> bool:
        """Whether this process is running and last said it runs the scheduler."""
        log = self.log()
        return self.alive() and log.rfind(ELECTED) > log.rfind(DEMOTED)

    def healthy(self) -> bool:
        """Whether GET /healthz answers 200."""
        if not self.alive():
            raise AssertionError(
                f"{self.name} exited with {self.process.returncode}:\n{self.log()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(self.url + "healthz", timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def wait_ready(self, timeout: float = 30.0) -> ServeProcess:
        wait_until(self.healthy, timeout, f"{self.name} to answer /healthz")
        return self

    def kill(self) -> None:
        """SIGKILL the server process itself (not its chart workers): a crash, no cleanup."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def terminate(self, timeout: float = 20.0) -> int:
        """SIGTERM and wait for the exit code."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def cleanup(self) -> None:
        """Kill whatever is left of this process's group (its chart workers after a SIGKILL)."""
        if self.alive():
            self.kill()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
