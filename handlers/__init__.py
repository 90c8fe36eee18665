"""Slack listeners: each module has register(app, services)."""

from __future__ import annotations

from slack_bolt import App

from bot.bootstrap import AppServices
from handlers import alerts, commands, home, review_actions


def register_all(app: App, services: AppServices) -> None:
    """Register every listener module on the app."""
    for module in (commands, home, alerts, review_actions):
        module.register(app, services)
