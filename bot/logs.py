"""Logging for every command: human lines by default, JSON lines with MLCOST_LOG_FORMAT=json.

Whatever the format, the values of the secrets mlcost is configured with (Slack tokens and
signing secret, AWS keys, the database password) are replaced by `***` in every line.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
from collections.abc import Iterable
from typing import Any

from bot.masking import mask_text

# Their DEBUG output carries request signatures, Authorization headers, response_url tokens and
# STS answers (temporary credentials): never shown, whatever -v says. Without -v they log
# warnings only, even when serve logs its own INFO lines: slack_sdk logs each retried request's
# URL at INFO, a response_url among them (those are redacted too, see SLACK_HOOK).
SECRET_BEARING_LOGGERS = ("botocore", "boto3", "urllib3", "s3transfer", "slack_sdk")

LOG_FORMATS = ("human", "json")
HUMAN_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
REDACTED = "***"
# A shorter value (a test's "testing", a placeholder) would blank out ordinary words.
MIN_SECRET_LENGTH = 8
AWS_SECRET_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
SLACK_SECRET_VARIABLES = ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET")


# A response_url or incoming webhook carries its own credential in the path
# (https://hooks.slack.com/commands/T.../123/AbC...): anyone holding it can post.
SLACK_HOOK = re.compile(
    r"(hooks\.slack(?:-gov)?\.com/(?:commands|actions|services|triggers)/)[^\s'\"<>]+"
)


class Redactor:
    """Replace each known secret value, the credential in Slack hook URLs, and whatever
    mask_text finds (URL credentials and `?token=` parameters among them), in a line."""

    def __init__(self, secrets: Iterable[str]) -> None:
        found = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}
        self.secrets = sorted(found, key=len, reverse=True)  # a secret inside another goes last

    def __call__(self, line: str) -> str:
        for secret in self.secrets:
            if secret in line:
                line = line.replace(secret, REDACTED)
        if "hooks.slack" in line:
            line = SLACK_HOOK.sub(r"\1" + REDACTED, line)
        return mask_text(line)  # URL credentials, AWS key ids, `token=...` wherever they come from


class HumanFormatter(logging.Formatter):
    """`time level logger message`, then the traceback; secrets redacted."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__(HUMAN_FORMAT)
        self.redact = redact

    def format(self, record: logging.LogRecord) -> str:
        return self.redact(super().format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message (and exc_info); secrets redacted."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self.redact = redact

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        # redacting the encoded line also covers a secret json.dumps escaped (none of the
        # characters tokens and keys are made of are escaped)
        return self.redact(json.dumps(entry, ensure_ascii=False, default=str))


def logging_settings() -> tuple[str, list[str]]:
    """Return MLCOST_LOG_FORMAT and the configured secret values (environment and .env).

    With a setting that does not validate (the command reports it), the format falls back to
    "human" and the secrets are taken from the environment as they are.
    """
    from bot.config import Settings, SettingsError

    secrets = [os.environ.get(name, "") for name in AWS_SECRET_VARIABLES]
    try:
        settings = Settings()
    except SettingsError:
        value = os.environ.get("MLCOST_LOG_FORMAT", "").strip().lower()
        secrets += [os.environ.get(name, "") for name in SLACK_SECRET_VARIABLES]
        return (value if value in LOG_FORMATS else "human"), secrets
    slack = (settings.slack_bot_token, settings.slack_app_token, settings.slack_signing_secret)
    for secret in slack:
        if secret is not None:
            secrets.append(secret.get_secret_value())
    secrets.extend(database_password(settings.database_url))
    secrets.extend(poll_source_passwords(settings.poll_sources))
    return settings.log_format, secrets


def poll_source_passwords(entries: str) -> list[str]:
    """Return the passwords and credential query values (`?token=...`) in MLCOST_POLL_SOURCES
    URLs (`opencost:http://user:pw@host`)."""
    from urllib.parse import parse_qsl, quote, unquote, urlsplit

    from bot.masking import is_credential_parameter

    found: list[str] = []
    for entry in entries.split(","):
        _kind, _, location = entry.strip().partition(":")
        try:
            parts = urlsplit(location)
            password = parts.password
        except ValueError:
            continue
        values = [v for k, v in parse_qsl(parts.query) if is_credential_parameter(k)]
        for value in [password, *values]:
            if value:
                found += [value, unquote(value), quote(unquote(value), safe="")]
    return list(dict.fromkeys(found))


def database_password(url: str) -> list[str]:
    """Return the password in a database URL, as written in it and decoded, if it has one."""
    from urllib.parse import quote

    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        password = make_url(url).password
    except ArgumentError:
        return []
    return list(dict.fromkeys([str(password), quote(str(password), safe="")])) if password else []


_handler: logging.Handler | None = None  # ours, once installed on the root logger


def configure_logging(
    verbose: bool, log_format: str | None = None, secrets: Iterable[str] | None = None
) -> None:
    """Log warnings, or debug detail with -v, to stderr in the configured format.

    Called again (serve, once its settings are read) it changes the format and level in place.
    Like logging.basicConfig it leaves a root logger with someone else's handlers alone (a test
    runner's), but the AWS and Slack clients' loggers are set whatever happens: INFO with -v,
    else WARNING.
    """
    global _handler
    for name in SECRET_BEARING_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)
    root = logging.getLogger()
    if _handler is None or _handler not in root.handlers:
        if root.handlers:
            return
        _handler = logging.StreamHandler()
        root.addHandler(_handler)
    if log_format is None or secrets is None:
        configured_format, configured = logging_settings()
        log_format = log_format or configured_format
        secrets = configured if secrets is None else secrets
    redact = Redactor(secrets)
    _handler.setFormatter(JsonFormatter(redact) if log_format == "json" else HumanFormatter(redact))
    root.setLevel(logging.DEBUG if verbose else logging.WARNING)
