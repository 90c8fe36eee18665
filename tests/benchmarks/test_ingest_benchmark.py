"""The ingestion benchmark runs end to end (its figures are for people, not assertions)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from tests.conftest import DATA

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "ingest.py"


def test_benchmark_runs_and_reconciles(tmp_path: Path) -> None:
    small = tmp_path / "data"
    small.mkdir()
    month = pq.read_table(DATA / "Dec2018-WorkshopCUR-00001.snappy.parquet").slice(0, 5_000)
    pq.write_table(month, small / "Dec2018-WorkshopCUR-00001.snappy.parquet")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--data", str(small), "--scale", "2", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "10,000 rows" in done.stdout  # twice over
    assert "mlcost ingest (DB writes)" in done.stdout
    assert "pandas read_parquet+groupby" in done.stdout
    assert "reconciliation OK" in done.stdout
