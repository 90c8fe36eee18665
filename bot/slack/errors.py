"""What Slack's refusals mean: permanent for the message, worth another try, or too large.

Slack answers most refusals with HTTP 200 and `{"ok": false, "error": ...}`; rate limits come as
HTTP 429 with Retry-After, outages as 5xx or timeouts. Errors Slack documents as non-retryable
are permanent: retrying sends the same refused request forever. An error in neither list is
retried with the backoff (it may be new, and failing closed would drop a message).
"""

from __future__ import annotations

import http.client
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from bot.slack.guard import MessageTooLarge, shrink_message

log = logging.getLogger(__name__)

T = TypeVar("T")

# a message too large for Slack: shrunk once (fewer blocks, shorter text), then permanent
TOO_LARGE_ERRORS = frozenset(
    {"msg_too_long", "msg_blocks_too_long", "invalid_blocks", "too_many_blocks"}
)

PERMANENT_ERRORS = TOO_LARGE_ERRORS | frozenset(
    {
        # where: the channel or thread is gone, archived or closed to the bot
        "channel_not_found",
        "is_archived",
        "not_in_channel",
        "is_inactive",
        "thread_not_found",
        "restricted_action",
        "restricted_action_read_only_channel",
        "restricted_action_thread_only_channel",
        "restricted_action_non_threadable_channel",
        "restricted_action_thread_locked",
        "team_access_not_granted",
        "ekm_access_denied",
        # what: the message itself is refused
        "invalid_blocks_format",
        "no_text",
        "too_many_attachments",
        "invalid_metadata_format",
        "invalid_metadata_schema",
        "metadata_too_large",
        "metadata_must_be_sent_from_app",
        "duplicate_message_not_found",
        # an update of a message that cannot be changed
        "cant_update_message",
        "message_not_found",
        "edit_window_closed",
        "update_failed",
        # who: the token or the app's grants
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "no_permission",
        "missing_scope",
        "not_allowed_token_type",
        "access_denied",
        "org_login_required",
        "two_factor_setup_required",
        "as_user_not_supported",
        "invalid_arguments",
        "invalid_arg_name",
        "invalid_array_arg",
        "invalid_charset",
        "invalid_form_data",
        "invalid_post_type",
        "missing_post_type",
        "method_deprecated",
        "deprecated_endpoint",
    }
)

TRANSIENT_ERRORS = frozenset(
    {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)


def slack_error(exc: BaseException) -> str | None:
    """Return the `error` of a Slack API refusal, or None for anything else."""
    response: Any = getattr(exc, "response", None)
    if response is None or not hasattr(response, "get"):
        return None
    try:
        error = response.get("error")
    except Exception:  # a response without a JSON body
        return None
    return str(error) if error else None


def status_code(exc: BaseException) -> int | None:
    """Return the HTTP status of a failed Web API call, if it had one."""
    code = getattr(getattr(exc, "response", None), "status_code", None)
    return code if isinstance(code, int) else None


def is_transient(exc: BaseException) -> bool:
    """Whether Slack could not answer now: 429, 5xx, a timeout or network error, or a busy API."""
    if isinstance(exc, OSError | http.client.HTTPException):  # timeouts, URLError, resets
        return True
    code = status_code(exc)
    if code is not None and (code == 429 or code >= 500):
        return True
    return slack_error(exc) in TRANSIENT_ERRORS


def is_permanent(exc: BaseException) -> bool:
    """Whether no retry of the same request can succeed (a message over Slack's limits too)."""
    if isinstance(exc, MessageTooLarge):
        return True
    if is_transient(exc):
        return False
    return slack_error(exc) in PERMANENT_ERRORS


def is_too_large(exc: BaseException) -> bool:
    """Whether Slack refused the message for its size (a smaller one may be accepted)."""
    return isinstance(exc, MessageTooLarge) or slack_error(exc) in TOO_LARGE_ERRORS


class StillTooLarge(MessageTooLarge):
    """Slack refused a message as too large, and its shrunk copy too."""


def send_shrinking(
    send: Callable[[str, list[dict[str, Any]]], T], text: str, blocks: list[dict[str, Any]]
) -> T:
    """Send a message; if it is refused as too large, send a shrunk copy once.

    Raise StillTooLarge (permanent) when the shrunk copy is refused for its size too, naming
    both refusals; any other failure of either attempt propagates as it is.
    """
    try:
        return send(text, blocks)
    except Exception as exc:
        smaller = shrink_message(text, blocks) if is_too_large(exc) else None
        if smaller is None:
            raise
        first = describe(exc)
    log.warning("Slack refused a message as too large (%s); sending it shrunk", first)
    try:
        return send(*smaller)
    except Exception as again:
        if is_too_large(again):
            raise StillTooLarge(
                f"{first}; shrunk to {len(smaller[1])} blocks: {describe(again)}"
            ) from again
        raise


def describe(exc: BaseException) -> str:
    """Describe a failed Slack call in one line, its Slack error first (no token, no URL)."""
    error, code = slack_error(exc), status_code(exc)
    if error:
        return f"{error} ({type(exc).__name__}{f', HTTP {code}' if code else ''})"
    return f"{type(exc).__name__}{f' ({code})' if code else ''}: {str(exc)[:300]}"
