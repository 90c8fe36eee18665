"""Benchmark scripts: each prints its figures (python benchmarks/NAME.py --help)."""
