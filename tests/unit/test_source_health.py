"""What /healthz and the log show of a source's error: short, and no credentials."""

from __future__ import annotations

from bot.notify.source_health import MESSAGE_LIMIT, redact, safe_error_message


def test_credentials_are_masked() -> None:
    text = (
        "postgresql://mlcost:pa55@db/x s3 AKIAIOSFODNN7EXAMPLE "
        "X-Amz-Signature=abc123&X-Amz-Credential=AKIA/x password: hunter2 xoxb-123-abc"
    )
    masked = redact(text)
    for secret in ("pa55", "AKIAIOSFODNN7EXAMPLE", "abc123", "hunter2", "xoxb-123-abc"):
        assert secret not in masked
    assert "postgresql://mlcost:***@db/x" in masked


def test_the_message_is_one_short_line() -> None:
    message = safe_error_message(RuntimeError("first line " + "x" * 1000 + "\nsecond line"))
    assert message.startswith("first line") and "second" not in message
    assert len(message) == MESSAGE_LIMIT
    assert safe_error_message(RuntimeError()) == ""
