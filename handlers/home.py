"""App Home: publish the user's dashboard when they open the Home tab."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App
from slack_sdk import WebClient

from bot.bootstrap import AppServices
from bot.db.engine import session_scope
from bot.slack.blocks.home import build_home_view
from bot.slack.guard import checked_view
from bot.spend.home import home_dashboard

log = logging.getLogger(__name__)


def register(app: App, services: AppServices) -> None:
    @app.event("app_home_opened")
    def handle_app_home_opened(event: dict[str, Any], client: WebClient) -> None:
        """Refresh the Home tab (the Messages tab is off in the manifest)."""
        if event.get("tab", "home") != "home":
            return
        user_id = event.get("user", "")
        with session_scope(services.session_factory) as session:
            board = home_dashboard(
                session=session,
                user_id=user_id,
                today=services.clock().date(),
                currency=services.settings.currency,
            )
        view = checked_view(build_home_view(board, board.currency))
        client.views_publish(user_id=user_id, view=view)
