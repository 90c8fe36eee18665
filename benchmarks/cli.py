"""Benchmark the commands people wait on, as whole processes (start to exit, imports included).

    python benchmarks/cli.py [--runs 5] [--mlcost .venv/bin/mlcost] [--before OTHER/bin/mlcost]
                           [--data DIR]

With `--before`, the same commands run first with the other entry point (an older checkout's
venv), and each line shows before → after.

Each command line runs `--runs` times as a fresh process, as a user types it; the figure is the
median wall time and the worst peak RSS (the child's own `ru_maxrss`, read with `os.wait4`).

- `ingest cur` reads the three CUR months in tests/data (or the CUR Parquet files in `--data`)
  into a fresh, migrated SQLite file (the migration is not timed), against a naive pandas
  script on the same files: `read_parquet` of every column, a groupby of the unblended cost by
  day, product, resource and two tags, and its sum, which it prints. And against the floor:
  a script with no mlcost in it (pyarrow and sqlite3 alone) that reads the columns the ingest
  reads, groups them by day and the fields mlcost groups by, and writes the groups into a copy
  of the ledger table with its indexes in one transaction: no attribution, checks, rollup or
  reconciliation, the least any ingest into that table costs in Python.
- `ingest focus` reads tests/data/focus_sample.csv the same way.
- `report spend`, `report chargeback`, `gate`, `report waste`, `review show` and `audit` run
  against the demo's database
  (`mlcost demo --dir` in a temporary folder, made once, not timed).
- `--help` for scale.

mlcost's own modules are compiled to bytecode first (`compileall`, `--before`'s too), as
installing a package does and as pandas' are: with PYTHONDONTWRITEBYTECODE set (as on the shared
VM) an editable install would otherwise compile every module of `bot` again in each run (about
0.15 s of `ingest cur`).

Targets (issue 24): ingest cur at most 0.5x the pandas script's wall and 0.3x its RSS; every
report, gate, review and audit under 0.5 s; --help under 0.15 s.
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


# The floor: what a process that does nothing but read, group and write takes (pyarrow and
# sqlite3, no framework): the columns mlcost reads, grouped by day and its group fields with the
# two tags, written into a copy of the ledger table with its indexes, in one transaction. No
# attribution, checks, rollup or reconciliation: what is left of an ingest without mlcost in it.
FLOOR_SCRIPT = """\
import sqlite3, sys
import pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq
database, paths = sys.argv[1], sys.argv[2:]
# ledger column <- CUR column (a column a file lacks is left NULL)
keys = {"billing_account": "bill_payer_account_id", "sub_account": "line_item_usage_account_id",
        "service": "line_item_product_code", "usage_type": "line_item_usage_type",
        "region": "product_region", "resource_id": "line_item_resource_id",
        "instance_type": "product_instance_type", "charge_category": "line_item_line_item_type",
        "currency": "line_item_currency_code", "model": "resource_tags_user_workload",
        "team": "resource_tags_user_cost_center"}
sums = {"billed_cost": ("line_item_unblended_cost", 10), "usage_quantity":
        ("line_item_usage_amount", 6)}
parts = []
for path in paths:
    names = set(pq.read_schema(path).names)
    present = {k: c for k, c in keys.items() if c in names}
    t = pq.read_table(path, columns=["line_item_usage_start_date",
                                     "bill_billing_period_start_date", *present.values(),
                                     *(c for c, _ in sums.values())])
    t = t.append_column("day", pc.cast(pc.floor_temporal(
        t.column("line_item_usage_start_date"), unit="day"), pa.date32()))
    t = t.append_column("billing_period", pc.cast(
        t.column("bill_billing_period_start_date"), pa.date32()))
    g = t.group_by(["day", "billing_period", *present.values()]).aggregate(
        [(c, "sum") for c, _ in sums.values()])
    ledger_name = {c: k for k, c in present.items()} | {
        f"{c}_sum": k for k, (c, _) in sums.items()}
    parts.append(g.rename_columns([ledger_name.get(n, n) for n in g.column_names]))
names = ["day", "billing_period", *keys, *sums]
columns = []
for name in names:
    values = [p.column(name) if name in p.column_names else pa.nulls(p.num_rows) for p in parts]
    if name in sums:
        values = [pc.cast(pc.round(pc.multiply(v, 10 ** sums[name][1])), pa.int64())
                  for v in values]
    columns.append([x for v in values
                    for x in (v if name in sums else pc.cast(v, pa.string())).to_pylist()])
rows = list(zip(*columns))
db = sqlite3.connect(database)
for (sql,) in db.execute("SELECT sql FROM sqlite_master WHERE tbl_name = 'daily_spend' "
                         "AND sql IS NOT NULL").fetchall():
    db.execute(sql.replace("daily_spend", "floor_spend"))
with db:
    db.execute("PRAGMA cache_size = -65536")
    db.executemany(
        f"INSERT INTO floor_spend (run_id, provider, stage, attribution, effective_cost,"
        f" gpu_hours, estimated, node_offset, {', '.join(names)})"
        f" VALUES (1, 'AWS', 'other', 'tag', 0, 0, 0, 0, {', '.join('?' * len(names))})", rows)
billed = sum(r[-2] for r in rows) / 10 ** 10
print(f"{len(rows)} ledger rows, billed {billed:.2f}")
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


Row = tuple[str, float, int, str]


def figures(
    mlcost: str, runs: int, env: dict[str, str], work: Path, cur_files: list[Path]
) -> list[Row]:
    """Measure every command line with one mlcost entry point; the pandas script first."""
    python = str(Path(mlcost).parent / "python")
    subprocess.run(
        [mlcost, "demo", "--dir", str(work / "demo")], check=True, capture_output=True, env=env
    )
    demo = f"sqlite:///{work / 'demo' / 'mlcost-demo.db'}"
    counter = iter(range(1_000_000))
    registry = work / "registry.yaml"
    registry.write_text(REGISTRY)

    def fresh_database() -> str:
        url = f"sqlite:///{work / f'ingest-{next(counter)}.db'}"
        for words in (["db", "upgrade"], ["registry", "import", str(registry)]):
            subprocess.run(
                [mlcost, "--database-url", url, *words], check=True, capture_output=True, env=env
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

    def on_demo(*words: str) -> list[str]:
        return [mlcost, "--database-url", demo, *words]

    script = work / "naive_pandas.py"
    script.write_text(PANDAS_SCRIPT)
    floor = work / "floor.py"
    floor.write_text(FLOOR_SCRIPT)

    def floor_command() -> list[str]:
        database = fresh_database().removeprefix("sqlite:///")
        return [python, str(floor), database, *map(str, cur_files)]

    pandas = "naive pandas (read_parquet + groupby + sum)"
    return [
        measure(pandas, [python, str(script), *map(str, cur_files)], runs, env),
        measure("floor: pyarrow + sqlite3, no mlcost", floor_command, runs, env),
        measure("mlcost ingest cur (3 CUR months)", ingest("cur", cur_files), runs, env),
        measure("mlcost ingest focus (FOCUS 1.0 sample)", ingest("focus", [FOCUS_FILE]), runs, env),
        measure(
            f"mlcost report spend --month {MONTH}",
            on_demo("report", "spend", "--month", MONTH),
            runs,
            env,
        ),
        measure(
            f"mlcost report chargeback --month {MONTH}",
            on_demo("report", "chargeback", "--month", MONTH),
            runs,
            env,
        ),
        measure("mlcost gate recsys", on_demo("gate", "recsys", "--as-of", AS_OF), runs, env),
        measure("mlcost report waste", on_demo("report", "waste", "--as-of", AS_OF), runs, env),
        measure(
            f"mlcost review show --month {MONTH}",
            on_demo("review", "show", "--month", MONTH),
            runs,
            env,
        ),
        measure("mlcost audit", on_demo("audit"), runs, env),
        measure("mlcost --help", [mlcost, "--help"], runs, env),
    ]


def compile_bytecode(mlcost: str, env: dict[str, str]) -> None:
    """Compile the `bot` package the entry point runs to bytecode, as installing it would."""
    code = (
        "import bot, compileall, sys; "
        "sys.exit(not compileall.compile_dir(bot.__path__[0], quiet=1))"
    )
    subprocess.run([str(Path(mlcost).parent / "python"), "-c", code], check=True, env=env)


def entry_point(path: str) -> str | None:
    """Return `path` if an entry point is there, else None."""
    return path if Path(path).exists() else None


def main() -> int:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mlcost", default=str(ROOT / ".venv" / "bin" / "mlcost"))
    parser.add_argument(
        "--before",
        metavar="MLCOST",
        help="another mlcost entry point (an older checkout's venv) measured in the same run",
    )
    parser.add_argument(
        "--data",
        type=Path,
        help="a folder of CUR Parquet files (default: the months in tests/data)",
    )
    args = parser.parse_args()
    cur_files = sorted(args.data.glob("*.parquet")) if args.data else CUR_FILES
    mlcost = entry_point(args.mlcost) or shutil.which("mlcost")
    before = entry_point(args.before) if args.before else None
    if mlcost is None or (args.before and before is None):
        print("no mlcost entry point: pip install -e . first, or pass --mlcost", file=sys.stderr)
        return 2
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLCOST_", "SLACK_"))}
    env["MLCOST_TIMEZONE"] = "UTC"
    for entry in (mlcost, before):
        if entry:
            compile_bytecode(entry, env)

    with tempfile.TemporaryDirectory(prefix="mlcost-bench-") as tmp:
        old = figures(before, args.runs, env, Path(tmp) / "before", cur_files) if before else None
        rows = figures(mlcost, args.runs, env, Path(tmp) / "after", cur_files)
    pandas_wall, pandas_rss, pandas_total = rows[0][1], rows[0][2], rows[0][3].strip()
    print(f"whole processes, median of {args.runs} runs (peak RSS: the worst run)")
    if old is None:
        print(f"  {'command':<44} {'wall':>8} {'peak RSS':>9}  vs pandas")
    else:
        print(f"  {'command':<44} {'wall before → after':>19} {'peak RSS before → after':>24}")
    for index, (label, wall, rss, _) in enumerate(rows):
        ratio = (
            f"{wall / pandas_wall:.2f}x wall, {rss / pandas_rss:.2f}x RSS"
            if "ingest cur" in label or label.startswith("floor")
            else ""
        )
        if old is None:
            print(f"  {label:<44} {wall:>6.2f} s {rss:>6} MB  {ratio}")
        else:
            _, old_wall, old_rss, _ = old[index]
            print(
                f"  {label:<44} {old_wall:>7.2f} → {wall:>5.2f} s"
                f" {old_rss:>9} → {rss:>5} MB  {ratio}"
            )
    print(
        f"pandas' unblended total: {pandas_total}; the floor's: {rows[1][3].strip()} "
        "(mlcost's billed total is in its ingest output)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
