"""The Slack WebClient, pointed at SLACK_API_URL."""

from __future__ import annotations

from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from bot.config import SlackSettings


def make_web_client(settings: SlackSettings, *, rate_limit_retries: int = 1) -> WebClient:
    """Create a WebClient for the bot token and the configured base URL.

    Only a 429 is retried inside the client (Slack refused the call, so repeating it is safe). A
    timeout or a 5xx is not: the post may have reached Slack, and only the outbox can tell, by
    looking its key up before posting again.
    """
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    return WebClient(
        token=token,
        base_url=settings.slack_base_url(),
        # typed int by slack_sdk; urllib takes float seconds
        timeout=settings.slack_timeout_seconds,  # type: ignore[arg-type]
        retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=rate_limit_retries)],
    )
