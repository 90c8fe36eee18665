"""The HTTP edge benchmark runs end to end on both servers, small (its figures are for people)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "http_edge.py"


@pytest.mark.parametrize("server", ["waitress", "wsgiref"])
def test_http_edge_benchmark_runs(server: str) -> None:
    small = ["--concurrent", "5", "--rounds", "1", "--slow", "5", "--trickle", "1", "--probe", "1"]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--server", server, *small],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert f"server: {server}" in done.stdout
    assert "acks, 5 concurrent signed `/mlcost help` x 1 rounds" in done.stdout
    assert "statuses {200: 5}" in done.stdout
    assert "slow connections: 5 of 5 connected" in done.stdout
    assert "/healthz with 5 slow connections open" in done.stdout
