"""Cost against value: value metrics, unit economics, verdicts and the release gate."""
