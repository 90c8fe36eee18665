"""Spend sources: each reads one kind of billing data into canonical daily charges."""
