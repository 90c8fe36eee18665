"""No secret reaches the output of serve, poll or ingest, with -v, in either log format.

Every secret mlcost can be configured with gets a distinctive value; the commands really use
them (the fake Slack and the fake AWS endpoint check the credentials arrived), and then their
stdout and stderr are searched for each value.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from tests.chaos.replicas import ServeProcess, free_port, mlcost_executable, serve_env
from tests.conftest import DATA, PG_ENV
from tests.support.fake_slack import FakeSlack
from tests.support.slack_requests import FORM, signed_headers, slash_command

SECRETS = {
    "SLACK_BOT_TOKEN": "xoxb-LEAKCHECK-bot-7f3a9c21",
    "SLACK_APP_TOKEN": "xapp-1-LEAKCHECK-app-51d2e8",
    "SLACK_SIGNING_SECRET": "LEAKCHECK-signing-0c8e4b77",
    "AWS_ACCESS_KEY_ID": "AKIALEAKCHECK7Q2ZX",
    "AWS_SECRET_ACCESS_KEY": "LEAKCHECK-aws-secret-9d1f6a/xY+z",
    "AWS_SESSION_TOKEN": "LEAKCHECK-session-token-3b7c5e",
}
DB_PASSWORD = "LEAKCHECK-db-pw-6e2a"


class FakeAws:
    """Answer every AWS JSON call with a Cost Explorer result; remember the request headers."""

    def __init__(self) -> None:
        answer = json.loads((DATA / "test_query_total_costs_per_hub-input.json").read_text())
        answer.pop("ResponseMetadata", None)
        self.headers: list[dict[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fake.headers.append(dict(self.headers))
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_aws() -> Iterator[FakeAws]:
    aws = FakeAws()
    yield aws
    aws.stop()


def with_password(url: str) -> str:
    """The test database's URL with a password in it (PostgreSQL here trusts, so it is unused)."""
    if not os.environ.get(PG_ENV):
        return url  # SQLite URLs take no password: see the unreachable-database test below
    return make_url(url).set(password=DB_PASSWORD).render_as_string(hide_password=False)


def run_command(args: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [*mlcost_executable(), *args], env=env, cwd=cwd, capture_output=True, timeout=120
    )
    output = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    assert done.returncode == 0, output[-3000:]
    return output


def start_verbose_serve(workdir: Path, env: dict[str, str]) -> ServeProcess:
    """Start `mlcost serve --http -v` as ServeProcess.start does (which passes no -v)."""
    port = free_port()
    log_path = workdir / "serve.log"
    with open(log_path, "wb") as log:
        serve = ["serve", "--http", "--host", "127.0.0.1", "--port", str(port), "-v"]
        process = subprocess.Popen(
            [*mlcost_executable(), *serve],
            cwd=workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return ServeProcess("serve", port, log_path, process)


def assert_no_secret(output: str, what: str) -> None:
    leaked = [name for name, value in SECRETS.items() if value in output]
    if DB_PASSWORD in output:
        leaked.append("the database password")
    assert not leaked, f"{what} printed {leaked}"


@pytest.mark.parametrize("log_format", ["human", "json"])
def test_serve_poll_and_ingest_print_no_secret_with_v(
    database_url: str,
    fake_slack: FakeSlack,
    fake_aws: FakeAws,
    tmp_path: Path,
    log_format: str,
) -> None:
    url = with_password(database_url)
    settings = {
        **SECRETS,
        "MLCOST_DATABASE_URL": url,
        "SLACK_API_URL": fake_slack.url,
        "AWS_ENDPOINT_URL": fake_aws.url,
        "AWS_DEFAULT_REGION": "us-east-1",
        "MLCOST_POLL_SOURCES": "cost-explorer",
        "MLCOST_LOG_FORMAT": log_format,
        "MLCOST_LEADER_CHECK_SECONDS": "0.2",
    }
    env = serve_env(settings)
    outputs = {
        "db upgrade": run_command(["db", "upgrade", "-v"], env, tmp_path),
        "ingest focus": run_command(
            ["ingest", "focus", str(DATA / "focus_sample.csv"), "-v"], env, tmp_path
        ),
        "ingest cost-explorer": run_command(
            ["ingest", "cost-explorer", "--start", "2026-06-20", "--end", "2026-06-28", "-v"],
            env,
            tmp_path,
        ),
        "poll": run_command(["poll", "-v"], env, tmp_path),
    }
    # AWS was called with the keys, and SigV4 put the key ID and session token in the headers
    assert fake_aws.headers
    assert SECRETS["AWS_ACCESS_KEY_ID"] in fake_aws.headers[0]["Authorization"]
    assert fake_aws.headers[0]["X-Amz-Security-Token"] == SECRETS["AWS_SESSION_TOKEN"]

    serve = start_verbose_serve(tmp_path, env)
    try:
        serve.wait_ready()
        body = slash_command("help", user="U1", channel="C1", response_url=fake_slack.url + "r/1")
        headers = signed_headers(body, content_type=FORM, secret=SECRETS["SLACK_SIGNING_SECRET"])
        request = urllib.request.Request(
            serve.url + "slack/events", data=body.encode(), headers=headers, method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
        fake_slack.wait_for("r/1")
        assert serve.terminate() == 0
    finally:
        serve.cleanup()
    auth = [c.headers.get("Authorization") for c in fake_slack.calls_to("auth.test")]
    assert auth == [f"Bearer {SECRETS['SLACK_BOT_TOKEN']}"]
    outputs["serve"] = serve.log()

    for what, output in outputs.items():
        assert_no_secret(output, what)
    debug = [line for line in outputs["serve"].splitlines() if "DEBUG" in line]
    assert debug, "serve -v logged no debug detail"
    if log_format == "json":
        for line in filter(None, outputs["serve"].splitlines()):
            entry = json.loads(line)
            assert {"time", "level", "logger", "message"} <= entry.keys()


def test_an_unreachable_database_is_named_without_its_password(tmp_path: Path) -> None:
    env = serve_env({**SECRETS, "SLACK_API_URL": "http://127.0.0.1:9/"})
    url = f"postgresql+psycopg://mlcost:{DB_PASSWORD}@127.0.0.1:9/mlcost"
    for args in (["report", "spend", "-v"], ["poll", "-v"], ["db", "upgrade", "-v"]):
        done = subprocess.run(
            [*mlcost_executable(), "--database-url", url, *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            timeout=60,
        )
        output = done.stdout.decode() + done.stderr.decode()
        assert done.returncode == 2, output
        assert "cannot use the database postgresql+psycopg://mlcost:***@127.0.0.1:9" in output
        assert_no_secret(output, " ".join(args))
