"""The HTTP edge: Slack's events endpoint and /healthz."""
