"""App Home: publish the user's dashboard when they open the Home tab."""

from __future__ import annotations

from typing import Any

from slack_bolt import App, BoltContext
from slack_sdk import WebClient

from bot.slack.blocks.home import build_home_view
from bot.slack.error_boundary import guarded
from bot.slack.guard import checked_view
from bot.slack.middleware import services_of, unit_of_work_of
from bot.spend.home import home_dashboard


def publish_home(event: dict[str, Any], client: WebClient, context: BoltContext) -> None:
    """Refresh the Home tab (the Messages tab is off in the manifest)."""
    if event.get("tab", "home") != "home":
        return
    user_id = event.get("user", "")
    services = services_of(context)
    board = unit_of_work_of(context)(
        lambda session: home_dashboard(
            session=session,
            user_id=user_id,
            today=services.clock().date(),
            currency=services.settings.currency,
            now=services.clock(),
        )
    )
    client.views_publish(user_id=user_id, view=checked_view(build_home_view(board, board.currency)))


def register(app: App) -> None:
    """Wire the Home tab."""
    app.event("app_home_opened")(guarded(publish_home))
