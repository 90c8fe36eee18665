"""`mlcost serve` refuses to start, in one line, when a setting, Slack or the database is wrong.

Each check runs before anything starts: no worker, no scheduler, no listener, and the checks
after a failed one never run (the fake Slack and the database show what was touched).
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from sqlalchemy import inspect

from bot.cli import main
from bot.db.engine import make_engine
from tests.support.fake_slack import FakeSlack

BOT_TOKEN = "xoxb-serve-check-0123456789"


def serve(
    monkeypatch: pytest.MonkeyPatch, database_url: str, slack_url: str, *extra: str, **env: str
) -> int:
    settings = {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": "serve-check-signing-secret",
        "SLACK_API_URL": slack_url,
        **env,
    }
    for key, value in settings.items():
        monkeypatch.setenv(key, value)
    return main(["--database-url", database_url, "serve", "--port", "0", *extra])


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"  # nothing listens there now


def test_socket_mode_without_an_app_token_is_refused_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    database = tmp_path / "never-created.db"
    code = serve(monkeypatch, f"sqlite:///{database}", fake_slack.url, "--socket")
    assert code == 2
    err = capsys.readouterr().err
    assert "SLACK_APP_TOKEN" in err and "xapp-" in err
    assert fake_slack.methods() == []  # not even auth.test
    assert not database.exists()  # the database was not opened, so no job could have run


def test_a_bot_token_in_place_of_the_app_token_is_refused(
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
    migrated_database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = serve(
        monkeypatch, migrated_database_url, fake_slack.url, "--socket", SLACK_APP_TOKEN=BOT_TOKEN
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "SLACK_APP_TOKEN is not an app-level token" in err
    assert BOT_TOKEN not in err
    assert fake_slack.methods() == []


def test_a_missing_bot_token_is_named(
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
    migrated_database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "serve-check-signing-secret")
    monkeypatch.setenv("SLACK_API_URL", fake_slack.url)
    assert main(["--database-url", migrated_database_url, "serve", "--port", "0"]) == 2
    assert "not set: SLACK_BOT_TOKEN" in capsys.readouterr().err
    assert fake_slack.methods() == []


@pytest.mark.parametrize("error", ["invalid_auth", "token_revoked", "account_inactive"])
def test_a_token_slack_refuses_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    error: str,
) -> None:
    fake_slack.fail("auth.test", 200, error=error)
    database = tmp_path / "untouched.db"
    assert serve(monkeypatch, f"sqlite:///{database}", fake_slack.url) == 2
    err = capsys.readouterr().err
    assert f"Slack refused SLACK_BOT_TOKEN ({error})" in err
    assert "Traceback" not in err and BOT_TOKEN not in err
    assert fake_slack.methods() == ["auth.test"]
    assert not database.exists()


def test_slack_unreachable_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
    migrated_database_url: str,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = closed_port_url()
    assert serve(monkeypatch, migrated_database_url, url) == 2
    err = capsys.readouterr().err
    assert f"cannot reach Slack at {url}" in err and "Connection refused" in err
    # the one line is ours: slack_sdk's own "Failed to send a request" error is not repeated
    assert [r.getMessage() for r in caplog.records if r.name.startswith("slack_sdk")] == []
    assert "Traceback" not in err


def test_slack_failing_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
    migrated_database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_slack.fail("auth.test", 503, times=5)
    assert serve(monkeypatch, migrated_database_url, fake_slack.url) == 2
    err = capsys.readouterr().err
    assert "Slack answered auth.test with HTTP 503" in err and "try again later" in err


def test_a_database_not_migrated_is_refused_and_left_alone(
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    engine = make_engine(database_url)
    try:
        engine.connect().close()  # the database exists (SQLite: an empty file), with no tables
        assert serve(monkeypatch, database_url, fake_slack.url) == 2
        err = capsys.readouterr().err
        assert "is empty, not at the latest schema" in err
        assert "run 'mlcost db upgrade' first" in err
        assert inspect(engine).get_table_names() == []  # serve did not migrate it
    finally:
        engine.dispose()
    assert fake_slack.methods() == ["auth.test"]


def test_a_missing_sqlite_file_is_refused_and_not_created(
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    database = tmp_path / "missing.db"
    assert serve(monkeypatch, f"sqlite:///{database}", fake_slack.url) == 2
    err = capsys.readouterr().err
    assert f"the database sqlite:///{database} does not exist" in err
    assert "run 'mlcost db upgrade' first" in err
    assert not database.exists()


def test_an_unreachable_database_is_refused_without_its_password(
    monkeypatch: pytest.MonkeyPatch, fake_slack: FakeSlack, capsys: pytest.CaptureFixture[str]
) -> None:
    port = closed_port_url().rsplit(":", 1)[1].strip("/")
    url = f"postgresql+psycopg://mlcost:db-password-4711@127.0.0.1:{port}/mlcost"
    assert serve(monkeypatch, url, fake_slack.url) == 2
    err = capsys.readouterr().err
    assert "cannot use the database" in err and "***" in err
    assert "db-password-4711" not in err


def test_a_port_in_use_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
    migrated_database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for key, value in {
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_SIGNING_SECRET": "serve-check-signing-secret",
            "SLACK_API_URL": fake_slack.url,
        }.items():
            monkeypatch.setenv(key, value)
        args = ["--database-url", migrated_database_url, "serve", "--no-scheduler"]
        assert main([*args, "--host", "127.0.0.1", "--port", port]) == 2
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err


def test_an_app_token_slack_refuses_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
    migrated_database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_slack.fail("apps.connections.open", 200, error="invalid_auth")
    app_token = "xapp-1-refused-0123456789"
    code = serve(
        monkeypatch, migrated_database_url, fake_slack.url, "--socket", SLACK_APP_TOKEN=app_token
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "Slack refused SLACK_APP_TOKEN (invalid_auth)" in err
    assert app_token not in err and "Traceback" not in err
    assert fake_slack.methods() == ["auth.test", "apps.connections.open"]


def test_a_database_behind_the_latest_migration_is_refused(
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from alembic import command

    from bot.db.engine import alembic_config

    command.upgrade(alembic_config(database_url), "0006_review_decisions")
    assert serve(monkeypatch, database_url, fake_slack.url) == 2
    err = capsys.readouterr().err
    assert "is at revision 0006_review_decisions, not at the latest schema" in err
    assert "run 'mlcost db upgrade' first" in err


def test_socket_mode_needs_no_signing_secret(
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
    migrated_database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Slack signs nothing it sends over the WebSocket: the checks and the app pass without it,
    # up to the connection (refused here, so the test ends there)
    fake_slack.fail("apps.connections.open", 200, error="invalid_auth")
    for key, value in {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": "xapp-1-socket-0123456789",
        "SLACK_API_URL": fake_slack.url,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("SLACK_SIGNING_SECRET", raising=False)
    assert main(["--database-url", migrated_database_url, "serve", "--socket"]) == 2
    err = capsys.readouterr().err
    assert "SLACK_SIGNING_SECRET" not in err
    assert "Slack refused SLACK_APP_TOKEN (invalid_auth)" in err
    assert fake_slack.methods() == ["auth.test", "apps.connections.open"]


def test_http_mode_still_needs_the_signing_secret(
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
    migrated_database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("SLACK_API_URL", fake_slack.url)
    monkeypatch.delenv("SLACK_SIGNING_SECRET", raising=False)
    assert main(["--database-url", migrated_database_url, "serve", "--port", "0"]) == 2
    assert "not set: SLACK_SIGNING_SECRET" in capsys.readouterr().err
    assert fake_slack.methods() == []


@pytest.mark.parametrize(
    ("mode", "env", "named"),
    [
        ((), {"SLACK_BOT_TOKEN": "xoxb-..."}, "SLACK_BOT_TOKEN is still the placeholder"),
        ((), {"SLACK_SIGNING_SECRET": "..."}, "SLACK_SIGNING_SECRET is still the placeholder"),
        (
            ("--socket",),
            {"SLACK_BOT_TOKEN": "xoxb-...", "SLACK_APP_TOKEN": "xapp-..."},
            "SLACK_BOT_TOKEN and SLACK_APP_TOKEN are still the placeholder",
        ),
    ],
)
def test_a_placeholder_from_env_example_is_refused_before_any_slack_call(
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    mode: tuple[str, ...],
    env: dict[str, str],
    named: str,
) -> None:
    database = tmp_path / "never-created.db"
    code = serve(monkeypatch, f"sqlite:///{database}", fake_slack.url, *mode, **env)
    assert code == 2
    err = capsys.readouterr().err
    assert f"{named} from .env.example" in err
    assert "api.slack.com/apps" in err and "Traceback" not in err
    assert fake_slack.methods() == []  # not even auth.test
    assert not database.exists()
