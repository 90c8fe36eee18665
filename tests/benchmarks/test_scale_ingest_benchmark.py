"""The 100x ingestion benchmark generates CUR files like the real ones and ingests them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from tests.conftest import DATA

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "scale_ingest.py"


def test_generated_cur_files_ingest_and_reconcile(tmp_path: Path) -> None:
    folder = tmp_path / "cur"
    done = subprocess.run(
        [
            *(sys.executable, str(SCRIPT), "--rows", "20000", "--resources", "300"),
            *("--models", "50", "--database", "sqlite", "--keep", str(folder)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "read 20,000 rows" in done.stdout
    assert "reconciliation OK" in done.stdout
    assert "sqlite" in done.stdout.splitlines()[-1]
    (generated,) = folder.glob("*.parquet")
    columns = set(pq.read_schema(generated).names)
    real = set(pq.read_schema(DATA / "Dec2018-WorkshopCUR-00001.snappy.parquet").names)
    tags = {c for c in columns if c.startswith("resource_tags_user_")}
    assert len(tags) == 40
    assert columns - tags <= real  # the real files' column names
