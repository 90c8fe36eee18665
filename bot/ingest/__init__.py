"""Ingestion: billing sources read into charges, attributed, written to the ledger."""
