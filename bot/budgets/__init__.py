"""Budgets: where each stands, which alerts are due, silences and changes."""
