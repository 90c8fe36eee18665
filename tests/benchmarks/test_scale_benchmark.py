"""The 100x benchmark runs end to end on a small PostgreSQL seeding (figures are for people)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PG_ENV

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "scale.py"


@pytest.mark.skipif(
    not os.environ.get(PG_ENV, "").startswith("postgresql"),
    reason=f"benchmarks/scale.py needs PostgreSQL ({PG_ENV})",
)
def test_scale_benchmark_runs_on_a_small_seeding() -> None:
    small = ["--budgets", "300", "--alerting", "20", "--models", "40", "--teams", "8"]
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--postgres",
            os.environ[PG_ENV],
            *small,
            "--resources",
            "400",
            "--months",
            "1",
            "--repeat",
            "1",
            "--skip-commands",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "1. evaluate 300 budgets" in done.stdout
    assert "2. first poll cycle (20 budgets brought over a threshold)" in done.stdout
    assert "GetQueryResults pages of 1,000" in done.stdout
