"""`ingest` tells pyarrow there is no pandas; a conversion that asks for pandas still gets it."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
import pyarrow as pa
from bot.cli.ingest_cmd import arrow_without_pandas

arrow_without_pandas()
pa.array([1, 2]).to_pylist()
pa.scalar(False)
print("pandas" in sys.modules)
frame = pa.table({"cost": [1.5, 2.5]}).to_pandas()
print(type(frame).__name__, float(frame["cost"].sum()))
"""


def test_python_values_convert_without_pandas_and_to_pandas_still_works() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["False", "DataFrame 4.0"]
