"""The composition root for Slack: Settings -> services -> Bolt App with every handler."""

from __future__ import annotations

from slack_bolt import App

from bot.bootstrap import AppServices
from bot.errors import MlcostError
from bot.slack.error_boundary import handle_error
from bot.slack.middleware import services_middleware


class ConfigurationError(MlcostError):
    """A required setting is missing."""


def build_app(services: AppServices, *, process_before_response: bool = False) -> App:
    """Build the Bolt app: the services middleware, the error boundary and every listener."""
    from handlers import register_all

    secret = services.settings.slack_signing_secret
    if secret is None:
        raise ConfigurationError("SLACK_SIGNING_SECRET is not set")
    app = App(
        name="mlcost",  # named, Bolt does not walk the call stack to find a name
        client=services.client,
        signing_secret=secret.get_secret_value(),
        process_before_response=process_before_response,
        token_verification_enabled=False,
        raise_error_for_unhandled_request=False,
    )
    app.middleware(services_middleware(services))
    app.error(handle_error)
    register_all(app)
    return app
