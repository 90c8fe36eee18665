"""Builders and fakes shared by the test tiers: signed requests, the fake Slack, demo data."""
