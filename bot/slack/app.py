"""The composition root for Slack: Settings -> services -> Bolt App with every handler."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from slack_bolt import App
from slack_bolt.authorization import AuthorizeResult
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.bootstrap import AppServices
from bot.errors import MlcostError
from bot.slack.error_boundary import handle_error
from bot.slack.middleware import services_middleware


class ConfigurationError(MlcostError):
    """A required setting is missing, or Slack refuses it."""


class SlackUnavailable(MlcostError):
    """Slack could not be reached, or could not answer."""


# auth.test errors that mean the token itself is no good (docs.slack.dev, auth.test "Errors")
REFUSED_TOKEN_ERRORS = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "no_permission",
        "org_login_required",
        "enterprise_is_restricted",
        "team_access_not_granted",
        "ekm_access_denied",
    }
)


@dataclass(frozen=True)
class BotIdentity:
    """Who the bot token is in Slack, from one auth.test."""

    user_id: str
    user: str
    team_id: str
    team: str
    bot_id: str | None = None
    enterprise_id: str | None = None
    scopes: str | None = None

    def describe(self) -> str:
        """Return `@name (U..) in Team (T..)`, each ID once when Slack gave no name."""
        user = self.user_id if self.user in ("", self.user_id) else f"@{self.user} ({self.user_id})"
        team = self.team_id if self.team in ("", self.team_id) else f"{self.team} ({self.team_id})"
        return f"{user} in {team}"


def identify_bot(client: WebClient) -> BotIdentity:
    """Call auth.test once: who the token is, or a one-line reason why Slack would not say."""
    where = client.base_url
    # slack_sdk logs its own ERROR line for a failed request; the reason is raised in one line below
    sdk_log = logging.getLogger("slack_sdk.web.base_client")
    sdk_level = sdk_log.level
    sdk_log.setLevel(logging.CRITICAL)
    try:
        response = client.auth_test()
    except SlackApiError as exc:
        status = exc.response.status_code
        data = exc.response.data if isinstance(exc.response.data, dict) else {}
        error = str(data.get("error") or "")
        if status >= 500 or status == 429:
            raise SlackUnavailable(
                f"Slack answered auth.test with HTTP {status} ({where}); try again later"
            ) from None
        if error in REFUSED_TOKEN_ERRORS:
            raise ConfigurationError(
                f"Slack refused SLACK_BOT_TOKEN ({error}): it is wrong, revoked, or the app was "
                "uninstalled; copy the Bot User OAuth Token (xoxb-...) from the app's "
                "OAuth & Permissions page"
            ) from None
        raise ConfigurationError(
            f"Slack answered auth.test with {error or f'HTTP {status}'} ({where})"
        ) from None
    except OSError as exc:  # URLError, a refused connection, a timeout, a DNS failure
        reason = getattr(exc, "reason", None) or exc
        raise SlackUnavailable(f"cannot reach Slack at {where}: {reason}") from None
    finally:
        sdk_log.setLevel(sdk_level)
    return BotIdentity(
        user_id=str(response.get("user_id") or ""),
        user=str(response.get("user") or ""),
        team_id=str(response.get("team_id") or ""),
        team=str(response.get("team") or ""),
        bot_id=response.get("bot_id"),
        enterprise_id=response.get("enterprise_id"),
        scopes=response.headers.get("x-oauth-scopes"),
    )


def build_app(
    services: AppServices,
    *,
    identity: BotIdentity | None = None,
    process_before_response: bool = False,
    socket_mode: bool = False,
) -> App:
    """Build the Bolt app: the services middleware, the error boundary and every listener.

    Given the bot's identity (serve checks the token with auth.test before it starts), Bolt
    authorizes every request with it and never calls auth.test itself: a request that arrives
    while Slack is down is acknowledged as usual. Without it, Bolt calls auth.test on the first
    request (tests whose fake Slack answers it). In Socket Mode Slack signs nothing (the
    WebSocket is opened with the app-level token), so no signing secret is needed or checked.
    """
    from handlers import register_all

    secret = services.settings.slack_signing_secret
    if secret is None and not socket_mode:
        raise ConfigurationError("SLACK_SIGNING_SECRET is not set")
    if identity is None:
        auth: dict[str, Any] = {"client": services.client}
    else:
        # Bolt authorizes with a client that has a token once, on its first request, and
        # again on every request until auth.test succeeds; a client without one makes it use
        # `authorize`, which answers from the identity serve checked
        auth = {
            "client": _without_token(services.client),
            "authorize": _authorize_as(identity, services.client.token),
        }
    app = App(
        name="mlcost",  # named, Bolt does not walk the call stack to find a name
        signing_secret=secret.get_secret_value() if secret and not socket_mode else "",
        request_verification_enabled=not socket_mode,
        process_before_response=process_before_response,
        token_verification_enabled=False,
        raise_error_for_unhandled_request=False,
        **auth,
    )
    app.middleware(services_middleware(services))
    app.error(handle_error)
    register_all(app)
    return app


def _without_token(client: WebClient) -> WebClient:
    """Return a client like `client` (URL, timeout, retries) but without its token."""
    return WebClient(
        token=None,
        base_url=client.base_url,
        timeout=client.timeout,
        ssl=client.ssl,
        proxy=client.proxy,
        headers=client.headers,
        retry_handlers=list(client.retry_handlers),
    )


def _authorize_as(identity: BotIdentity, token: str | None) -> Any:
    """Return Bolt's `authorize` function: every request is the checked bot's."""

    def authorize(user_id: str | None) -> AuthorizeResult:
        return AuthorizeResult(
            enterprise_id=identity.enterprise_id,
            team_id=identity.team_id,
            team=identity.team,
            bot_id=identity.bot_id,
            bot_user_id=identity.user_id,
            bot_token=token,
            bot_scopes=identity.scopes,
            user_id=user_id,
        )

    return authorize
