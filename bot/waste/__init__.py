"""Waste: money that burns silently, and what to do about it."""
