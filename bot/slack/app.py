"""The composition root for Slack: Settings -> services -> Bolt App with every handler."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App, BoltResponse, Respond
from slack_sdk import WebClient

from bot.bootstrap import AppServices
from bot.errors import MlcostError, new_reference

log = logging.getLogger(__name__)


class ConfigurationError(MlcostError):
    """A required setting is missing."""


def build_app(services: AppServices, *, process_before_response: bool = False) -> App:
    """Build the Bolt app with its WebClient and every handler registered."""
    from handlers import register_all

    secret = services.settings.slack_signing_secret
    if secret is None:
        raise ConfigurationError("SLACK_SIGNING_SECRET is not set")
    app = App(
        client=services.client,
        signing_secret=secret.get_secret_value(),
        process_before_response=process_before_response,
        token_verification_enabled=False,
        raise_error_for_unhandled_request=False,
    )

    @app.error
    def handle_errors(
        error: Exception,
        body: dict[str, Any],
        response: BoltResponse | None,
        client: WebClient,
        respond: Respond | None,
    ) -> BoltResponse | None:
        """The one error boundary: tell the person (with a reference), log the traceback."""
        kind = body.get("type") or body.get("command") or "request"
        if isinstance(error, MlcostError):
            log.warning("%s refused: %s", kind, error)
            text = f":warning: {error}"
        else:
            ref = new_reference()
            log.error("unhandled error in %s (reference %s)", kind, ref, exc_info=error)
            text = (
                f":x: Sorry, something went wrong on our side (reference `{ref}`). "
                "Please try again; if it keeps happening, give the reference to your mlcost admin."
            )
        if body.get("type") == "view_submission" and response is not None:
            # Not acknowledged yet: the modal itself can say it (Slack shows nothing for a 500).
            return BoltResponse(
                status=200, body={"response_action": "update", "view": _error_view(text)}
            )
        _tell(client, respond, body, text)
        return BoltResponse(status=200, body="") if response is not None else None

    register_all(app, services)
    return app


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
