"""The composition root for Slack: Settings -> services -> Bolt App with every handler."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from slack_bolt import App

from bot.errors import MlcostError
from bot.services import AppServices

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
    def handle_errors(error: Exception, body: dict[str, Any]) -> None:
        """Log anything no listener handled, with a correlation id (never the payload)."""
        ref = uuid.uuid4().hex[:8]
        kind = body.get("type") or body.get("command") or "request"
        log.error("unhandled error in %s (ref %s)", kind, ref, exc_info=error)

    register_all(app, services)
    return app
