"""Benchmark CUR ingestion (database writes included) against pandas on the same files.

    python benchmarks/ingest.py [--scale 10] [--database-url URL] [--repeat N] [--data DIR]

mlcost: `ingest()` of the CUR files into a fresh, migrated database (SQLite file, or a throwaway
PostgreSQL database on the --database-url server) with a registry that reads two tags, commit
included. pandas: `read_parquet` of every column of the same files, then a float groupby of the
unblended cost by day, product, resource and the same two tags; nothing written.

Each measurement runs in its own subprocess and the peak RSS reported is the child's ru_maxrss.
Linux carries the parent's RSS into a child's ru_maxrss across fork and exec, so this parent
imports only the standard library: it prepares the input and the databases in subprocesses too.
Children inherit the environment (e.g. ARROW_DEFAULT_MEMORY_POOL). Times exclude interpreter
start-up and module imports, for both sides; CPU s counts every thread.
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
from collections.abc import Callable
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
    "day",
    "line_item_product_code",
    "line_item_resource_id",
    "resource_tags_user_workload",
    "resource_tags_user_cost_center",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="folder of CUR Parquet files")
    parser.add_argument("--database-url", help="PostgreSQL server URL (default: a SQLite file)")
    parser.add_argument("--scale", type=int, default=1, help="repeat the input N times (10: 10x)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side (median shown)")
    parser.add_argument("--skip-pandas", action="store_true")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--files", nargs="*", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args)))
        return 0
    return run_parent(args)


# --- parent: standard library only ---------------------------------------------------------


def run_parent(args: argparse.Namespace) -> int:
    data = args.data or (SHARED_DATA if SHARED_DATA.is_dir() else TEST_DATA)
    files = [str(f) for f in sorted(data.glob(PATTERN))]
    if not files:
        print(f"no {PATTERN} files in {data}", file=sys.stderr)
        return 1
    server = ["--database-url", args.database_url] if args.database_url else []
    with tempfile.TemporaryDirectory(prefix="mlcost-bench-") as tmp:
        work = Path(tmp)
        if args.scale > 1:
            print(f"writing the input {args.scale}x (one row group per copy) ...", flush=True)
        prepared = child(
            "prepare", "--scale", str(args.scale), "--out", str(work / "input"), "--files", *files
        )
        files, rows = prepared["files"], prepared["rows"]
        backend = "PostgreSQL" if args.database_url else "SQLite file"
        print(
            f"{len(files)} files, {rows:,} rows, {prepared['mb']:.1f} MB; database: {backend}; "
            f"median of {args.repeat} runs, each in a fresh process",
            flush=True,
        )
        results: dict[str, list[dict[str, Any]]] = {"mlcost": [], "pandas": []}
        for attempt in range(args.repeat):
            url = child("database", "--out", str(work / f"run{attempt}.db"), *server)["url"]
            try:
                results["mlcost"].append(child("mlcost", "--url", url, "--files", *files))
            finally:
                if args.database_url:
                    child("drop", "--url", url, *server)
            if not args.skip_pandas:
                results["pandas"].append(child("pandas", "--files", *files))
            for kind, runs in results.items():
                if runs:
                    print(
                        f"  run {attempt + 1} {kind}: {runs[-1]['seconds']:.2f} s, "
                        f"{runs[-1]['peak_rss_mb']:.0f} MB",
                        flush=True,
                    )
    print_table(rows, results)
    return 0


def child(kind: str, *options: str) -> dict[str, Any]:
    """Run one step in a fresh interpreter and return the JSON it printed."""
    command = [sys.executable, __file__, "--child", kind, *options]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{done.stderr}")
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
        print(
            f"{labels[kind]:28} {seconds:8.2f} {cpu:7.2f} {rows / seconds:11,.0f} {rss:7.0f} MB  "
            f"{runs[0]['groups']:,}"
        )
    extra = results["mlcost"][0]
    print(f"\nmlcost wrote {extra['rows_written']:,} ledger rows; {extra['reconciliation']}")


# --- children ----------------------------------------------------------------------------


def prepare(args: argparse.Namespace) -> dict[str, Any]:
    """Scale the input if asked; describe it."""
    import pyarrow.parquet as pq

    files = [Path(f) for f in args.files]
    if args.scale > 1:
        files = scale_files(files, args.scale, args.out)
    return {
        "files": [str(f) for f in files],
        "rows": sum(pq.ParquetFile(f).metadata.num_rows for f in files),
        "mb": sum(f.stat().st_size for f in files) / 1e6,
    }


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


def fresh_database(args: argparse.Namespace) -> dict[str, str]:
    """Create an empty migrated database with the benchmark registry; return its URL."""
    return {"url": create_database(args.database_url, args.out, REGISTRY)}


def create_database(server: str | None, sqlite_file: Path, registry: str) -> str:
    """Create an empty migrated database (a throwaway one on the PostgreSQL `server`, else the
    SQLite file) with the registry imported; return its URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from bot.db.engine import make_engine, make_session_factory, session_scope, upgrade
    from bot.registry.spec import parse_registry
    from bot.registry.sync import import_registry

    if server:
        name = f"mlcost_bench_{uuid.uuid4().hex[:10]}"
        admin = create_engine(server, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        url = make_url(server).set(database=name).render_as_string(hide_password=False)
    else:
        sqlite_file.unlink(missing_ok=True)
        url = f"sqlite:///{sqlite_file}"
    engine = make_engine(url)
    try:
        upgrade(engine)
        with session_scope(make_session_factory(engine)) as session:
            import_registry(parse_registry(registry), session=session, actor="benchmark")
    finally:
        engine.dispose()
    return url


def drop_database(args: argparse.Namespace) -> dict[str, str]:
    """Drop a PostgreSQL database made by fresh_database (SQLite files go with the temp folder)."""
    drop(args.database_url, args.url)
    return {}


def drop(server: str, url: str) -> None:
    """Drop the PostgreSQL database at `url` from the `server`."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)'))
    admin.dispose()


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run_mlcost(args: argparse.Namespace) -> dict[str, Any]:
    """Ingest the files with `mlcost ingest cur`'s code path, commit included."""
    import pandas  # noqa: F401  pyarrow imports it on first use; keep imports out of the timing

    from bot.db.engine import make_engine, make_session_factory, session_scope
    from bot.ingest.ledger import ingest
    from bot.ingest.sources.cur import CurSource

    engine = make_engine(args.url)
    factory = make_session_factory(engine)
    started, cpu = time.perf_counter(), time.process_time()
    with session_scope(factory) as session:
        report = ingest(CurSource(args.files), session=session)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    engine.dispose()
    if not report.reconciled:
        raise SystemExit(report.reconciliation_line())
    return {
        "seconds": seconds,
        "cpu": cpu,
        "peak_rss_mb": peak_rss_mb(),
        "rows": report.rows_read,
        "groups": report.rows_written,
        "rows_written": report.rows_written,
        "reconciliation": report.reconciliation_line(),
    }


def run_pandas(args: argparse.Namespace) -> dict[str, Any]:
    """Read every column with pandas and group like the ledger does (float sums, no writes)."""
    import pandas as pd
    import pyarrow  # noqa: F401

    started, cpu = time.perf_counter(), time.process_time()
    frame = pd.concat([pd.read_parquet(f) for f in args.files], ignore_index=True)
    frame["day"] = frame["line_item_usage_start_date"].dt.floor("D")
    grouped = frame.groupby(PANDAS_KEYS, dropna=False)["line_item_unblended_cost"].sum()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {
        "seconds": seconds,
        "cpu": cpu,
        "peak_rss_mb": peak_rss_mb(),
        "rows": len(frame),
        "groups": len(grouped),
    }


CHILDREN: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "prepare": prepare,
    "database": fresh_database,
    "drop": drop_database,
    "mlcost": run_mlcost,
    "pandas": run_pandas,
}

if __name__ == "__main__":
    sys.exit(main())
