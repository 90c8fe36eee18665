"""Reading the ledger: spend reports per model, team and day, unallocated spend, forecasts."""
