"""The whole-process CLI benchmark runs end to end, before and after in one run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import DATA, PG_ENV

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "cli.py"
MLCOST = Path(sys.executable).parent / "mlcost"


@pytest.mark.skipif(
    bool(os.environ.get(PG_ENV)),
    reason="reads only SQLite files it makes itself: the SQLite pass runs it (30 s)",
)
def test_benchmark_prints_every_figure_before_and_after(tmp_path: Path) -> None:
    small = tmp_path / "data"
    small.mkdir()
    month = pq.read_table(DATA / "Dec2018-WorkshopCUR-00001.snappy.parquet").slice(0, 2_000)
    pq.write_table(month, small / "Dec2018-WorkshopCUR-00001.snappy.parquet")
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--runs",
            "1",
            "--data",
            str(small),
            "--mlcost",
            str(MLCOST),
            "--before",
            str(MLCOST),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for command in (
        "naive pandas",
        "floor: pyarrow + sqlite3",
        "mlcost ingest cur",
        "mlcost ingest focus",
        "mlcost report spend",
        "mlcost report chargeback",
        "mlcost gate recsys",
        "mlcost report waste",
        "mlcost review show",
        "mlcost audit",
        "mlcost --help",
    ):
        [line] = [line for line in lines if command in line]
        assert line.count("→") == 2, line  # wall and peak RSS, before → after
    for label in ("ingest cur", "floor:"):
        [line] = [line for line in lines if label in line]
        assert "x wall" in line and "x RSS" in line
    # the floor wrote the slice's groups and billed what pandas summed
    [totals] = [line for line in lines if line.startswith("pandas' unblended total")]
    pandas_total = totals.split(": ")[1].split(";")[0]
    assert f"ledger rows, billed {pandas_total} " in totals


def test_a_missing_before_entry_point_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--before", str(tmp_path / "nothing" / "mlcost")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "no mlcost entry point" in done.stderr
