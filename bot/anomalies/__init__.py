"""Anomalies: days far above their trailing baseline, and what drove them."""
