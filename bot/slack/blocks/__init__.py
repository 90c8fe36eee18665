"""Block Kit builders: pure functions from report objects to (text, blocks)."""
