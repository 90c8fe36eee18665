"""Slack edge: Web API client, message guard, notifier; Block Kit builders live beside them."""
