"""The OpenCost benchmark runs end to end on a small answer (its figures are for people)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "opencost.py"


def test_opencost_benchmark_runs_and_its_ledger_matches_the_answer() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--pods", "30", "--days", "3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "answer: 3 days x 32 allocations" in done.stdout
    assert "ingest: 96 allocations" in done.stdout
    assert "ledger total equals the answer's" in done.stdout
    assert "report chargeback 2026-11" in done.stdout
