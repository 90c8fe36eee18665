"""Benchmark CUR ingestion (database writes included) against pandas on the same files.

    python benchmarks/ingest.py [--scale 10] [--database-url URL] [--repeat N] [--data DIR]

mlcost: `ingest()` of the CUR files into a fresh, migrated database (SQLite file, or a throwaway
PostgreSQL database on the --database-url server) with a registry that reads two tags, commit
included. pandas: `read_parquet` of every column of the same files, then a float groupby of the
unblended cost by day, product, resource and the same two tags; nothing written.

Each measurement runs in its own subprocess, so the peak RSS reported (the child's ru_maxrss) is
that run's alone; children inherit the environment (e.g. ARROW_DEFAULT_MEMORY_POOL). Times
exclude interpreter start-up and module imports, for both sides; CPU s counts every thread.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data" / "aws-wa-labs"
TEST_DATA = ROOT / "tests" / "data"
PATTERN = "*2018-WorkshopCUR-*.parquet"

# Two tag keys attribution reads (and pandas groups by): the workshop's `workload` as the model
# tag and `cost_center` as the team tag.
REGISTRY = """\
teams:
  - {name: platform, channel: C0PLATFORM, owners: [U0PPP111]}
  - {name: analytics, channel: C0ANALYTICS, owners: [U0AAA111]}
models:
  - {name: baseload, team: platform, owners: [U0PPP111]}
  - {name: daytime, team: analytics, owners: [U0AAA111]}
attribution:
  model_tag_keys: [workload]
  team_tag_keys: [cost_center]
"""
PANDAS_KEYS = [
    "day", "line_item_product_code", "line_item_resource_id",
    "resource_tags_user_workload", "resource_tags_user_cost_center",
]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="folder of CUR Parquet files")
    parser.add_argument("--database-url", help="PostgreSQL server URL (default: a SQLite file)")
    parser.add_argument("--scale", type=int, default=1, help="repeat the input N times (10: 10x)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side (median shown)")
    parser.add_argument("--skip-pandas", action="store_true")
    parser.add_argument("--child", choices=["mlcost", "pandas"], help=argparse.SUPPRESS)
    parser.add_argument("--files", nargs="*", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "mlcost":
        print(json.dumps(run_mlcost(args.files, args.url)))
        return 0
    if args.child == "pandas":
        print(json.dumps(run_pandas(args.files)))
        return 0
    return run_parent(args)


# --- parent ------------------------------------------------------------------------------


def run_parent(args: argparse.Namespace) -> int:
    data = args.data or (SHARED_DATA if SHARED_DATA.is_dir() else TEST_DATA)
    files = sorted(data.glob(PATTERN))
    if not files:
        print(f"no {PATTERN} files in {data}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="mlcost-bench-") as tmp:
        work = Path(tmp)
        if args.scale > 1:
            print(f"writing the input {args.scale}x (one row group per copy) ...", flush=True)
            files = scale_files(files, args.scale, work / "input")
        rows = sum(parquet_rows(f) for f in files)
        size = sum(f.stat().st_size for f in files) / 1e6
        backend = "PostgreSQL" if args.database_url else "SQLite file"
        print(f"{len(files)} files, {rows:,} rows, {size:.1f} MB; database: {backend}; "
              f"median of {args.repeat} runs, each in a fresh process", flush=True)  # fmt: skip
        results: dict[str, list[dict[str, Any]]] = {"mlcost": [], "pandas": []}
        for attempt in range(args.repeat):
            url = fresh_database(args.database_url, work / f"run{attempt}.db")
            try:
                results["mlcost"].append(child("mlcost", files, url))
            finally:
                drop_database(args.database_url, url)
            if not args.skip_pandas:
                results["pandas"].append(child("pandas", files))
    print_table(rows, results)
    return 0


def child(kind: str, files: list[Path], url: str | None = None) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter and return what it printed."""
    command = [sys.executable, __file__, "--child", kind, "--files", *map(str, files)]
    if url:
        command += ["--url", url]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{kind} run failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def print_table(rows: int, results: dict[str, list[dict[str, Any]]]) -> None:
    print()
    print(f"{'':28} {'seconds':>8} {'CPU s':>7} {'rows/s':>11} {'peak RSS':>9}  output rows")
    labels = {
        "mlcost": "mlcost ingest (DB writes)",
        "pandas": "pandas read_parquet+groupby",
    }
    for kind, runs in results.items():
        if not runs:
            continue
        seconds = statistics.median(r["seconds"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        rss = statistics.median(r["peak_rss_mb"] for r in runs)
        print(f"{labels[kind]:28} {seconds:8.2f} {cpu:7.2f} {rows / seconds:11,.0f} {rss:7.0f} MB  "
              f"{runs[0]['groups']:,}")  # fmt: skip
    extra = results["mlcost"][0]
    print(f"\nmlcost wrote {extra['rows_written']:,} ledger rows; {extra['reconciliation']}")


def parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


def scale_files(files: list[Path], scale: int, target: Path) -> list[Path]:
    """Write each file `scale` times over, copy k shifted k years later, one row group each."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    target.mkdir(parents=True)
    written = []
    for path in files:
        table = pq.read_table(path)
        start = pc.min(table["bill_billing_period_start_date"]).as_py()
        out = target / path.name
        with pq.ParquetWriter(out, table.schema, compression="snappy") as writer:
            for k in range(scale):
                shift = start.replace(year=start.year + k) - start
                copy = table
                for i, field in enumerate(table.schema):
                    if pa.types.is_timestamp(field.type):
                        delta = pa.scalar(shift, pa.duration(field.type.unit))
                        copy = copy.set_column(i, field, pc.add(table.column(i), delta))
                writer.write_table(copy, row_group_size=table.num_rows)
        written.append(out)
    return written


def fresh_database(server_url: str | None, sqlite_path: Path) -> str:
    """Create an empty migrated database with the benchmark registry; return its URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from bot.db import make_engine, make_session_factory, session_scope, upgrade
    from bot.registry import import_registry, parse_registry

    if server_url:
        name = f"mlcost_bench_{uuid.uuid4().hex[:10]}"
        admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    else:
        url = f"sqlite:///{sqlite_path}"
    engine = make_engine(url)
    try:
        upgrade(engine)
        with session_scope(make_session_factory(engine)) as session:
            import_registry(parse_registry(REGISTRY), session=session, actor="benchmark")
    finally:
        engine.dispose()
    return url


def drop_database(server_url: str | None, url: str) -> None:
    """Drop a database made by fresh_database (the SQLite file goes with the temp folder)."""
    if not server_url:
        return
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)'))
    admin.dispose()


# --- children ----------------------------------------------------------------------------


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run_mlcost(files: list[str], url: str) -> dict[str, Any]:
    """Ingest the files with `mlcost ingest cur`'s code path, commit included."""
    import pandas  # noqa: F401  pyarrow imports it on first use; keep imports out of the timing

    from bot.db import make_engine, make_session_factory, session_scope
    from bot.ledger import ingest
    from bot.sources.cur import CurSource

    engine = make_engine(url)
    factory = make_session_factory(engine)
    started, cpu = time.perf_counter(), time.process_time()
    with session_scope(factory) as session:
        report = ingest(CurSource(files), session=session)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    engine.dispose()
    if not report.reconciled:
        raise SystemExit(report.reconciliation_line())
    return {
        "seconds": seconds, "cpu": cpu, "peak_rss_mb": peak_rss_mb(), "rows": report.rows_read,
        "groups": report.rows_written, "rows_written": report.rows_written,
        "reconciliation": report.reconciliation_line(),
    }  # fmt: skip


def run_pandas(files: list[str]) -> dict[str, Any]:
    """Read every column with pandas and group like the ledger does (float sums, no writes)."""
    import pandas as pd
    import pyarrow  # noqa: F401

    started, cpu = time.perf_counter(), time.process_time()
    frame = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    frame["day"] = frame["line_item_usage_start_date"].dt.floor("D")
    grouped = frame.groupby(PANDAS_KEYS, dropna=False)["line_item_unblended_cost"].sum()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {
        "seconds": seconds, "cpu": cpu, "peak_rss_mb": peak_rss_mb(), "rows": len(frame),
        "groups": len(grouped),
    }  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
