"""Benchmark how fast the command line answers `--help` (and a command's --help).

    python benchmarks/cli_startup.py [--runs 10] [--mlcost .venv/bin/mlcost]

Runs the installed `mlcost` entry point (a fresh process each time, as a user types it) and
prints the median and worst wall time per command line, then the slowest imports of one
`python -X importtime -m bot.cli --help`. Target (issue 12, item 5): under 0.3 s.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMAND_LINES = (["--help"], ["--version"], ["report", "spend", "--help"], ["ingest", "cur", "-h"])


def wall_times(command: list[str], runs: int) -> list[float]:
    """Return the wall time of each run of the command, in seconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def slowest_imports(count: int = 8) -> list[tuple[int, str]]:
    """Return the cumulative microseconds of the slowest top-level imports of `--help`."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "bot.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    found = []
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            found.append((int(parts[1]), parts[2].rstrip()))
    return sorted(found, reverse=True)[:count]


def main() -> int:
    """Print the timings."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--mlcost", default=str(ROOT / ".venv" / "bin" / "mlcost"))
    args = parser.parse_args()
    mlcost = args.mlcost if Path(args.mlcost).exists() else shutil.which("mlcost")
    if mlcost is None:
        print("no mlcost entry point: pip install -e . first, or pass --mlcost", file=sys.stderr)
        return 2
    print(f"{args.runs} runs each of {mlcost}")
    for words in COMMAND_LINES:
        times = wall_times([mlcost, *words], args.runs)
        print(
            f"  mlcost {' '.join(words):<22} median {statistics.median(times):.3f} s, "
            f"worst {max(times):.3f} s"
        )
    print("slowest imports of `mlcost --help` (cumulative):")
    for micros, name in slowest_imports():
        print(f"  {micros / 1000:8.1f} ms  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
