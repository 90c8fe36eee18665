"""Benchmark the commands people wait on, as whole processes (start to exit, imports included).

    python benchmarks/cli.py [--runs 5] [--mlcost .venv/bin/mlcost] [--data DIR]

Each command line runs `--runs` times as a fresh process, as a user types it; the figure is the
median wall time and the worst peak RSS (the child's own `ru_maxrss`, read with `os.wait4`).

- `ingest cur` reads the three CUR months in tests/data into a fresh, migrated SQLite file
  (the migration is not timed), against a naive pandas script on the same files: `read_parquet`
  of every column, a groupby of the unblended cost by day, product, resource and two tags, and
  its sum. Both print their total, and the two totals are compared.
- `ingest focus` reads tests/data/focus_sample.csv the same way.
- `report spend`, `report chargeback`, `gate` and `audit` run against the demo's database
  (`mlcost demo --dir` in a temporary folder, made once, not timed).
- `--help` for scale.

mlcost's own modules are compiled to bytecode first (`compileall`), as installing a package does
and as pandas' are: with PYTHONDONTWRITEBYTECODE set (as on the shared VM) an editable install
would otherwise compile every module of `bot` again in each run (about 0.15 s of `ingest cur`).

Targets (issue 24): ingest cur at most 0.5x the pandas script's wall and 0.3x its RSS; every
report, gate and audit under 0.5 s; --help under 0.15 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The ingest reads the two tags the pandas script groups by, as benchmarks/ingest.py's does: the
# workshop's `workload` as the model tag and `cost_center` as the team tag.
from benchmarks.ingest import REGISTRY  # noqa: E402

TEST_DATA = ROOT / "tests" / "data"
CUR_FILES = sorted(TEST_DATA.glob("*2018-WorkshopCUR-*.parquet"))
FOCUS_FILE = TEST_DATA / "focus_sample.csv"
MONTH = "2026-11"  # the demo's month
AS_OF = "2026-11-30"  # its last day: the gate judges the demo's data as of then

PANDAS_SCRIPT = """\
import sys
import pandas as pd
frame = pd.concat([pd.read_parquet(p) for p in sys.argv[1:]], ignore_index=True)
frame["day"] = frame["line_item_usage_start_date"].dt.floor("D")
keys = ["day", "line_item_product_code", "line_item_resource_id",
        "resource_tags_user_workload", "resource_tags_user_cost_center"]
grouped = frame.groupby(keys, dropna=False)["line_item_unblended_cost"].sum()
print(f"{grouped.sum():.2f}")
"""


def measure(
    label: str, make_command: list[str] | Callable[[], list[str]], runs: int, env: dict[str, str]
) -> tuple[str, float, int, str]:
    """Run a command line `runs` times; return its label, median wall, worst RSS, last output."""
    walls, rsss, out = [], [], ""
    for _ in range(runs):
        command = make_command() if callable(make_command) else make_command
        wall, rss, out = run_reaped(command, env)
        walls.append(wall)
        rsss.append(rss)
    return label, statistics.median(walls), max(rsss), out


def run_reaped(command: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Run a command and reap it with os.wait4, so its own peak RSS is read, not a maximum."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode not in (0, 1):  # the gate exits 1 when it says no
            raise SystemExit(
                f"{' '.join(command)} exited {child.returncode}:\n{err.read()[-2000:]}"
            )
        return wall, usage.ru_maxrss // 1024, out.read()


def main() -> int:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mlcost", default=str(ROOT / ".venv" / "bin" / "mlcost"))
    args = parser.parse_args()
    mlcost = args.mlcost if Path(args.mlcost).exists() else shutil.which("mlcost")
    if mlcost is None:
        print("no mlcost entry point: pip install -e . first, or pass --mlcost", file=sys.stderr)
        return 2
    python = str(Path(mlcost).parent / "python")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLCOST_", "SLACK_"))}
    env["MLCOST_TIMEZONE"] = "UTC"
    subprocess.run([python, "-m", "compileall", "-q", str(ROOT / "bot")], check=True, env=env)

    with tempfile.TemporaryDirectory(prefix="mlcost-bench-") as tmp:
        work = Path(tmp)
        subprocess.run(
            [mlcost, "demo", "--dir", str(work / "demo")],
            check=True,
            capture_output=True,
            env=env,
        )
        demo = f"sqlite:///{work / 'demo' / 'mlcost-demo.db'}"
        counter = iter(range(1_000_000))
        registry = work / "registry.yaml"
        registry.write_text(REGISTRY)

        def fresh_database() -> str:
            url = f"sqlite:///{work / f'ingest-{next(counter)}.db'}"
            for words in (["db", "upgrade"], ["registry", "import", str(registry)]):
                subprocess.run(
                    [mlcost, "--database-url", url, *words],
                    check=True,
                    capture_output=True,
                    env=env,
                )
            return url

        def ingest(kind: str, paths: list[Path]) -> Callable[[], list[str]]:
            return lambda: [
                mlcost,
                "--database-url",
                fresh_database(),
                "ingest",
                kind,
                "-q",
                *map(str, paths),
            ]

        script = work / "naive_pandas.py"
        script.write_text(PANDAS_SCRIPT)
        rows = [
            measure(
                "naive pandas (read_parquet + groupby + sum)",
                [python, str(script), *map(str, CUR_FILES)],
                args.runs,
                env,
            ),
            measure("mlcost ingest cur (3 CUR months)", ingest("cur", CUR_FILES), args.runs, env),
            measure(
                "mlcost ingest focus (FOCUS 1.0 sample)",
                ingest("focus", [FOCUS_FILE]),
                args.runs,
                env,
            ),
            measure(
                f"mlcost report spend --month {MONTH}",
                [mlcost, "--database-url", demo, "report", "spend", "--month", MONTH],
                args.runs,
                env,
            ),
            measure(
                f"mlcost report chargeback --month {MONTH}",
                [mlcost, "--database-url", demo, "report", "chargeback", "--month", MONTH],
                args.runs,
                env,
            ),
            measure(
                "mlcost gate recsys",
                [mlcost, "--database-url", demo, "gate", "recsys", "--as-of", AS_OF],
                args.runs,
                env,
            ),
            measure("mlcost audit", [mlcost, "--database-url", demo, "audit"], args.runs, env),
            measure("mlcost --help", [mlcost, "--help"], args.runs, env),
        ]
    pandas_wall, pandas_rss, pandas_total = rows[0][1], rows[0][2], rows[0][3].strip()
    print(f"whole processes, median of {args.runs} runs (peak RSS: the worst run)")
    print(f"  {'command':<44} {'wall':>8} {'peak RSS':>9}  vs pandas")
    for label, wall, rss, _ in rows:
        ratio = (
            f"{wall / pandas_wall:.2f}x wall, {rss / pandas_rss:.2f}x RSS"
            if "ingest cur" in label
            else ""
        )
        print(f"  {label:<44} {wall:>6.2f} s {rss:>6} MB  {ratio}")
    print(
        f"pandas' unblended total: {pandas_total} (mlcost's billed total is in its ingest output)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
