"""Charts: pandas/matplotlib (Agg) -> PNG bytes; no DB, no Slack."""
