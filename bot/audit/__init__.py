"""The audit trail: who changed what, before and after, read back for people."""
