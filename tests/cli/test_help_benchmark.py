"""The --help startup benchmark runs end to end (its figures are for people, not assertions)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "cli_startup.py"
MLCOST = Path(sys.executable).parent / "mlcost"


@pytest.mark.skipif(not MLCOST.exists(), reason="the mlcost entry point is not installed")
def test_cli_startup_benchmark_prints_each_command_line() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--runs", "1", "--mlcost", str(MLCOST)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    for words in ("--help", "--version", "report spend --help", "ingest cur -h"):
        assert f"mlcost {words} " in done.stdout
    assert "slowest imports of `mlcost --help`" in done.stdout
    assert " bot.cli" in done.stdout
