"""bot/logs.py: human or JSON lines, and no configured secret in either."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from bot.logs import (
    HumanFormatter,
    JsonFormatter,
    Redactor,
    database_password,
    logging_settings,
)

TOKEN = "xoxb-1234-5678-abcdefghijkl"


def record(message: str, *args: object, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError(f"bad value {TOKEN}")
        except ValueError:
            exc_info = sys.exc_info()
    return logging.LogRecord("bot.test", logging.WARNING, __file__, 1, message, args, exc_info)


def test_json_lines_carry_time_level_logger_and_message() -> None:
    line = JsonFormatter(Redactor([])).format(record("posted %d alerts", 3))
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["level"] == "WARNING"
    assert entry["logger"] == "bot.test"
    assert entry["message"] == "posted 3 alerts"
    assert entry["time"].endswith("+00:00")
    assert "exc_info" not in entry


def test_json_lines_carry_the_traceback_on_one_line() -> None:
    line = JsonFormatter(Redactor([])).format(record("failed", exc=True))
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["exc_info"].startswith("Traceback (most recent call last):")
    assert "ValueError: bad value" in entry["exc_info"]


@pytest.mark.parametrize("formatter", [HumanFormatter, JsonFormatter])
def test_secrets_are_redacted_in_messages_and_tracebacks(formatter: type) -> None:
    secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCY"
    line = formatter(Redactor([TOKEN, secret_key])).format(
        record("token %s key %s", TOKEN, secret_key, exc=True)
    )
    assert TOKEN not in line and secret_key not in line
    assert line.count("***") >= 3  # the message twice, the traceback once


def test_the_human_format_is_time_level_logger_message() -> None:
    line = HumanFormatter(Redactor([])).format(record("hello"))
    assert line.endswith(" WARNING bot.test hello")


def test_short_values_are_not_treated_as_secrets() -> None:
    # a placeholder such as "testing" would otherwise blank out the word everywhere
    assert Redactor(["testing", ""]).secrets == []
    assert Redactor(["abcdefgh"])("x abcdefgh y") == "x *** y"


def test_a_secret_inside_another_is_redacted_whole() -> None:
    redact = Redactor(["abcdefgh", "abcdefgh-and-more"])
    assert redact("abcdefgh-and-more abcdefgh") == "*** ***"


def test_logging_settings_collect_every_configured_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    values = {
        "SLACK_BOT_TOKEN": "xoxb-unit-bot-token",
        "SLACK_APP_TOKEN": "xapp-unit-app-token",
        "SLACK_SIGNING_SECRET": "unit-signing-secret",
        "AWS_ACCESS_KEY_ID": "AKIAUNITTESTKEY",
        "AWS_SECRET_ACCESS_KEY": "unit-aws-secret-key",
        "AWS_SESSION_TOKEN": "unit-aws-session-token",
        "MLCOST_DATABASE_URL": "postgresql+psycopg://u:unit-db-password@db:5432/x",
        "MLCOST_POLL_SOURCES": "cost-explorer,opencost:http://reader:unit-opencost-pw@oc:9003",
        "MLCOST_LOG_FORMAT": "json",
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    log_format, secrets = logging_settings()
    assert log_format == "json"
    expected = [v for k, v in values.items() if not k.startswith("MLCOST_")]
    assert {*expected, "unit-db-password", "unit-opencost-pw"} <= set(secrets)


def test_an_invalid_log_format_falls_back_to_human(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLCOST_LOG_FORMAT", "xml")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-still-redacted")
    log_format, secrets = logging_settings()
    assert log_format == "human"
    assert "xoxb-still-redacted" in secrets


def test_database_password() -> None:
    assert database_password("postgresql+psycopg://u:p%40ss@h/db") == ["p@ss", "p%40ss"]
    assert database_password("postgresql+psycopg://u:plain@h/db") == ["plain"]
    assert database_password("sqlite:///mlcost.db") == []
    assert database_password("not a url") == []


def test_slack_hook_urls_lose_their_credential() -> None:
    redact = Redactor([])
    line = (
        "retrying POST https://hooks.slack.com/commands/T0001/1234/AbCdEf123 and "
        "'https://hooks.slack.com/services/T0001/B0001/XyZ987'"
    )
    assert redact(line) == (
        "retrying POST https://hooks.slack.com/commands/*** and "
        "'https://hooks.slack.com/services/***'"
    )
