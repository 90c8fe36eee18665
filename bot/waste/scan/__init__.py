"""Scan the account's resources for waste: idle GPUs, endpoints nobody calls, orphaned storage.

Read-only. Each scanner takes an AWS client factory `aws(service, region)`, a region and a
ScanContext, and returns ResourceFindings; `run.scan_account` runs them all.
"""
