"""Slack listeners: each module's register(app) wires its module-level listener functions."""

from __future__ import annotations

from slack_bolt import App

from handlers import alerts, anomaly_answers, commands, home, review_actions, waste_actions


def register_all(app: App) -> None:
    """Register every listener module on the app."""
    for module in (commands, home, alerts, anomaly_answers, review_actions, waste_actions):
        module.register(app)
