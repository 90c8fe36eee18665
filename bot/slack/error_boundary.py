"""The one error boundary for commands, buttons, modals and events.

`@app.error` calls `handle_error`, and so does the `/mlcost` worker pool's entry point (those
commands run off Bolt's threads, where Bolt would only log a one-line message).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

from slack_bolt import Args, BoltResponse, Respond
from slack_sdk import WebClient

from bot.errors import MlcostError, new_reference
from bot.slack.guard import clip
from bot.slack.mrkdwn import escape_message

log = logging.getLogger(__name__)

MAX_FIELD_ERROR = 150  # Slack's limit on a modal field's error message


def handle_error(
    error: Exception,
    body: dict[str, Any],
    response: BoltResponse | None,
    client: WebClient,
    respond: Respond | None,
) -> BoltResponse | None:
    """Bolt's error handler: answer the request if it is not acknowledged yet (see answer_error)."""
    answer = answer_error(error, body, client, respond, acked=response is None)
    return None if response is None else BoltResponse(status=200, body=answer or "")


def answer_error(
    error: Exception,
    body: dict[str, Any],
    client: WebClient,
    respond: Respond | None,
    *,
    acked: bool,
) -> dict[str, Any]:
    """Tell the person what went wrong (a reference for the unexpected); log the traceback.

    Return what to acknowledge with: a modal not yet acknowledged says it itself (Slack shows
    nothing for a 500); otherwise the person is told ephemerally and the answer is empty.
    """
    kind = body.get("type") or body.get("command") or "request"
    if isinstance(error, MlcostError):
        log.warning("%s refused: %s", kind, error)
        text = f":warning: {escape_message(error)}"
    elif (outage := slack_outage(error)) is not None:
        # expected now and then, and the same for every request while it lasts: no traceback
        log.warning("%s not answered: Slack could not be reached (%s)", kind, outage)
        text = ":x: Slack could not be reached just now; please try again in a minute."
    else:
        ref = new_reference()
        log.error("unhandled error in %s (reference %s)", kind, ref, exc_info=error)
        text = (
            f":x: Sorry, something went wrong on our side (reference `{ref}`). "
            "Please try again; if it keeps happening, give the reference to your mlcost admin."
        )
    if body.get("type") == "view_submission" and not acked:
        return _modal_answer(error, body, text)
    _tell(client, respond, body, text)
    return {}


def slack_outage(error: BaseException) -> str | None:
    """Return why, if the error is Slack (or the way to it) failing rather than a bug here."""
    from http.client import HTTPException
    from urllib.error import URLError

    from slack_sdk.errors import SlackApiError

    if isinstance(error, SlackApiError) and (
        error.response.status_code >= 500 or error.response.status_code == 429
    ):
        return f"HTTP {error.response.status_code}"
    if isinstance(error, URLError):
        return str(error.reason)
    if isinstance(error, ConnectionError | HTTPException) or (
        isinstance(error, TimeoutError) and _raised_by_a_socket(error)
    ):
        return f"{type(error).__name__}: {error}"
    return None


def _raised_by_a_socket(error: BaseException) -> bool:
    """Whether the innermost frame is network code (a chart's render timeout is not)."""
    tb, filename = error.__traceback__, ""
    while tb is not None:
        filename, tb = tb.tb_frame.f_code.co_filename, tb.tb_next
    return filename.replace("\\", "/").endswith(("/socket.py", "/ssl.py", "/http/client.py"))


def _modal_answer(error: Exception, body: dict[str, Any], text: str) -> dict[str, Any]:
    """Put a refusal under the modal's input (the person can fix it), else replace the view."""
    field = _input_block(body)
    if isinstance(error, MlcostError) and field is not None:
        return {"response_action": "errors", "errors": {field: clip(str(error), MAX_FIELD_ERROR)}}
    return {"response_action": "update", "view": _error_view(text)}


def _input_block(body: dict[str, Any]) -> str | None:
    blocks = (body.get("view") or {}).get("blocks") or []
    return next((b.get("block_id") for b in blocks if b.get("type") == "input"), None)


def _error_view(text: str) -> dict[str, Any]:
    return {
        "type": "modal",
        "title": {"type": "plain_text", "text": "mlcost"},
        "close": {"type": "plain_text", "text": "Close"},
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
    }


def _tell(client: WebClient, respond: Respond | None, body: dict[str, Any], text: str) -> None:
    """Send an ephemeral note via the response_url, else to the user in the channel."""
    user = (body.get("user") or {}).get("id") or body.get("user_id")
    channel = (body.get("channel") or {}).get("id") or body.get("channel_id")
    try:
        if respond is not None:
            respond(response_type="ephemeral", replace_original=False, text=text)
        elif user and channel:
            client.chat_postEphemeral(channel=channel, user=user, text=text)
    except Exception as exc:  # the error is logged already; a note that cannot go out is not
        log.warning("could not tell %s about an error: %s", user, type(exc).__name__)


def guarded(listener: Callable[..., None]) -> Callable[[Args], None]:
    """Wrap a listener so that what it raises reaches `handle_error` here, not through Bolt.

    Given an exception after `ack()`, slack_bolt's thread runner sets the ack's response back to
    None; unless its poll saw the ack first, Slack gets a 404 after the 3 s ack timeout instead
    of the refusal. So the boundary runs inside the listener's thread, and an error raised before
    `ack()` is acknowledged here with the boundary's answer (a modal's field error, say).
    """
    wanted = list(inspect.signature(listener).parameters)

    @functools.wraps(listener)
    def run_guarded(args: Args) -> None:
        try:
            listener(**{name: getattr(args, name) for name in wanted})
        except Exception as exc:
            acked = args.ack.response is not None
            answer = answer_error(exc, args.body, args.client, args.respond, acked=acked)
            if not acked:
                args.ack(**answer)

    del run_guarded.__wrapped__  # Bolt injects by this function's own signature: `args`
    run_guarded.guarded = True  # type: ignore[attr-defined]
    return run_guarded
