"""Benchmark `mlcost ingest cur` at 100x: generated CUR files, as a whole process, per database.

    python benchmarks/scale_ingest.py [--rows 30000000] [--database sqlite|postgresql|both]
        [--postgres URL] [--resources 50000] [--models 2000] [--tag-keys 40] [--seed 24]

It generates one billing month of CUR Parquet files into a temporary folder (never in git): the
column names of the real files in tests/data, `--rows` rows in row groups of about 1M, a
deterministic seed. The month has realistic cardinality: `--resources` resources (EC2 instances,
SageMaker jobs and endpoints, S3 buckets, EBS volumes), each with its own product, usage type,
region and `--tag-keys` user tag columns (the model, team, stage and run tags among them);
`--models` registered models (most claimed by their `ml:model` tag, a few by registry match
rules). Each row is one resource's usage in one hour, so a month holds about resources x 30 days
ledger groups.

Then, for each database, a fresh migrated database gets the registry, and `mlcost ingest cur -q`
of the folder runs as its own process (reaped with os.wait4: its own peak RSS, imports included).
It prints rows, seconds, rows/s and peak RSS per database, and the reconciliation line.

This parent imports only the standard library (Linux carries a parent's RSS into a child's
ru_maxrss): the generation and the database set-up run in child processes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
ROW_GROUP = 1_000_000
TEAMS = 40
# (product code, product name, usage type, unit, instance types): what the resources bill
PRODUCTS = (
    (
        "AmazonEC2",
        "Amazon Elastic Compute Cloud",
        "USE1-BoxUsage:{}",
        "Hrs",
        ("p4d.24xlarge", "g5.xlarge", "g5.12xlarge", "m5.2xlarge", "c5.4xlarge", "p5.48xlarge"),
    ),
    (
        "AmazonSageMaker",
        "Amazon SageMaker",
        "USE1-Train:ml.{}",
        "Hrs",
        ("ml.p4d.24xlarge", "ml.g5.2xlarge", "ml.m5.xlarge"),
    ),
    (
        "AmazonSageMaker",
        "Amazon SageMaker",
        "USE1-Host:ml.{}",
        "Hrs",
        ("ml.g5.xlarge", "ml.inf2.xlarge", "ml.c5.xlarge"),
    ),
    ("AmazonS3", "Amazon Simple Storage Service", "USE1-TimedStorage-ByteHrs", "GB-Mo", ("",)),
    ("AmazonEC2", "Amazon Elastic Compute Cloud", "USE1-EBS:VolumeUsage.gp3", "GB-Mo", ("",)),
)
REGIONS = ("us-east-1", "us-west-2", "eu-west-1", "ap-northeast-1")
STAGES = ("training", "serving", "inference", "etl", "checkpoints", "")
# Models claimed by a registry rule rather than their own tag (attribution's slow path).
RULE_MODELS = 20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=30_000_000)
    parser.add_argument("--resources", type=int, default=50_000)
    parser.add_argument("--models", type=int, default=2_000)
    parser.add_argument("--tag-keys", type=int, default=40)
    parser.add_argument("--files", type=int, default=0, help="files (default: one per 10M rows)")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--database", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES, help="PostgreSQL server URL")
    parser.add_argument("--mlcost", default=str(ROOT / ".venv" / "bin" / "mlcost"))
    parser.add_argument("--keep", type=Path, help="write the input here and keep it")
    parser.add_argument("--child", choices=("generate", "database", "drop"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--registry", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args)))
        return 0
    return run_parent(args)


# --- parent: standard library only ---------------------------------------------------------


def run_parent(args: argparse.Namespace) -> int:
    databases = ["sqlite", "postgresql"] if args.database == "both" else [args.database]
    with tempfile.TemporaryDirectory(prefix="mlcost-scale-") as tmp:
        work = Path(tmp)
        folder = args.keep or work / "cur"
        started = time.perf_counter()
        print(f"generating {args.rows:,} CUR rows into {folder} ...", flush=True)
        made = child(args, "generate", "--out", str(folder))
        print(
            f"  {made['files']} files, {made['rows']:,} rows, {made['mb']:,.0f} MB, "
            f"{made['resources']:,} resources, {made['models']:,} models, "
            f"{made['tag_columns']} tag columns in {time.perf_counter() - started:.0f} s",
            flush=True,
        )
        results = []
        for database in databases:
            url = child(
                args,
                "database",
                "--out",
                str(work / "scale.db"),
                f"--postgres={args.postgres if database == 'postgresql' else ''}",
                "--registry",
                made["registry"],
            )["url"]
            try:
                seconds, rss, out = run_reaped(
                    [args.mlcost, "--database-url", url, "ingest", "cur", "-q", str(folder)]
                )
            finally:
                if database == "postgresql":
                    child(args, "drop", "--url", url, "--postgres", args.postgres)
            reconciliation = next(
                (line for line in out.splitlines() if line.startswith("reconciliation")), ""
            )
            wrote = next((line for line in out.splitlines() if " wrote " in line), "")
            results.append((database, seconds, rss, reconciliation, wrote))
            print(f"  {database}: {seconds:.1f} s, peak RSS {rss:,} MB", flush=True)
            print(f"    {wrote.split(': ', 1)[-1]}\n    {reconciliation}", flush=True)
    print(f"\n{'database':<12} {'rows':>12} {'seconds':>9} {'rows/s':>10} {'peak RSS':>10}")
    for database, seconds, rss, _, _ in results:
        print(
            f"{database:<12} {made['rows']:>12,} {seconds:>9.1f} {made['rows'] / seconds:>10,.0f} "
            f"{rss:>7,} MB"
        )
    return 0


def child(args: argparse.Namespace, kind: str, *options: str) -> dict[str, Any]:
    """Run one step in a fresh interpreter and return the JSON it printed."""
    command = [sys.executable, __file__, "--child", kind, *options]
    command += [
        f"--rows={args.rows}",
        f"--resources={args.resources}",
        f"--models={args.models}",
        f"--tag-keys={args.tag_keys}",
        f"--files={args.files}",
        f"--seed={args.seed}",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_reaped(command: list[str]) -> tuple[float, int, str]:
    """Run the command; return its wall seconds, its own peak RSS in MB and its output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLCOST_", "SLACK_"))}
    env["MLCOST_TIMEZONE"] = "UTC"
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{err.read()[-3000:]}")
        return wall, usage.ru_maxrss // 1024, out.read()


# --- children ----------------------------------------------------------------------------


def registry_text(models: int) -> str:
    """Return the registry: TEAMS teams, `models` models, RULE_MODELS of them claimed by rules."""
    lines = ["teams:"]
    lines += [f"  - {{name: team-{t:02d}, channel: C0TEAM{t:02d}}}" for t in range(TEAMS)]
    lines.append("models:")
    for m in range(models):
        match = ""
        if m < RULE_MODELS:  # untagged spend these claim: a project tag, or an S3 bucket glob
            match = (
                f", match: {{tags: {{project: proj-{m:02d}}}}}"
                if m % 2
                else f', match: {{resource_ids: ["arn:aws:s3:::bucket-{m:02d}-*"]}}'
            )
        lines.append(f"  - {{name: model-{m:04d}, team: team-{m % TEAMS:02d}{match}}}")
    lines += [
        "attribution:",
        '  model_tag_keys: ["ml:model"]',
        '  stage_tag_keys: ["ml:stage"]',
        "  team_tag_keys: [team]",
        '  run_tag_keys: ["ml:run"]',
    ]
    return "\n".join(lines) + "\n"


def generate(args: argparse.Namespace) -> dict[str, Any]:
    """Write the month's CUR files (one per 10M rows, row groups of ROW_GROUP) and the registry."""
    import datetime as dt

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(args.seed)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    registry = out.parent / "registry.yaml"
    registry.write_text(registry_text(args.models))
    n_res = args.resources

    def dictionary(indices: Any, values: list[str]) -> pa.DictionaryArray:
        return pa.DictionaryArray.from_arrays(
            pa.array(indices, pa.int32()), pa.array(values, pa.string())
        )

    # each resource's fixed attributes
    product = rng.choice(len(PRODUCTS), n_res, p=[0.35, 0.15, 0.15, 0.2, 0.15])
    instance = np.array([rng.integers(len(PRODUCTS[p][4])) for p in product])
    region = rng.integers(len(REGIONS), size=n_res)
    model = rng.integers(args.models, size=n_res)
    tagged = rng.random(n_res) < 0.8  # a fifth of the resources carry no ml:model tag
    kinds = {"AmazonEC2": "i-{:017x}", "AmazonS3": "", "AmazonSageMaker": ""}
    resource_ids, usage_types, instance_types, units = [], [], [], []
    for r in range(n_res):
        code, _, usage, unit, types = PRODUCTS[product[r]]
        itype = types[instance[r]]
        if code == "AmazonS3":
            rid = f"arn:aws:s3:::bucket-{r % 97:02d}-{r:06d}"
        elif code == "AmazonSageMaker":
            kind = "training-job" if "Train" in usage else "endpoint"
            rid = f"arn:aws:sagemaker:{REGIONS[region[r]]}:111122223333:{kind}/job-{r:06d}"
        elif "EBS" in usage:
            rid = f"vol-{r:017x}"
        else:
            rid = kinds[code].format(r)
        resource_ids.append(rid)
        usage_types.append(usage.format(itype.removeprefix("ml.")))
        instance_types.append(itype)
        units.append(unit)
    tag_keys = ["ml_model", "team", "ml_stage", "ml_run", "project"]
    tag_keys += [f"tag_{k:02d}" for k in range(args.tag_keys - len(tag_keys))]
    tag_values: dict[str, tuple[list[str], Any]] = {}
    for key in tag_keys:
        if key == "ml_model":
            values = [""] + [f"model-{m:04d}" for m in range(args.models)]
            index = np.where(tagged, model + 1, 0)
        elif key == "team":
            values = [""] + [f"team-{t:02d}" for t in range(TEAMS)]
            index = np.where(rng.random(n_res) < 0.9, model % TEAMS + 1, 0)
        elif key == "ml_stage":
            values = list(STAGES)
            index = rng.integers(len(STAGES), size=n_res)
        elif key == "ml_run":
            values = [""] + [f"run-{k:05d}" for k in range(5_000)]
            index = np.where(rng.random(n_res) < 0.3, rng.integers(1, 5_001, size=n_res), 0)
        elif key == "project":
            values = [""] + [f"proj-{k:02d}" for k in range(100)]
            index = np.where(~tagged, rng.integers(1, 101, size=n_res), 0)
        else:
            distinct = int(rng.integers(2, 200))
            values = [""] + [f"{key}-value-{k}" for k in range(distinct)]
            index = np.where(rng.random(n_res) < 0.5, rng.integers(1, distinct + 1, size=n_res), 0)
        tag_values[key] = (values, index)

    month = dt.datetime(2026, 10, 1, tzinfo=dt.UTC)
    hours = 31 * 24
    start_ms = int(month.timestamp() * 1000)
    files = args.files or max(1, -(-args.rows // 10_000_000))
    per_file = -(-args.rows // files)
    payer, account = "111122223333", ["111122223333", "444455556666", "777788889999"]
    item_types = ["Usage", "Tax", "Credit", "DiscountedUsage"]
    written = 0
    paths = []
    for f in range(files):
        path = out / f"mlcost-scale-{f + 1:05d}.snappy.parquet"
        paths.append(path)
        rows_here = min(per_file, args.rows - written)
        writer: pq.ParquetWriter | None = None
        done = 0
        while done < rows_here:
            n = min(ROW_GROUP, rows_here - done)
            res = rng.integers(n_res, size=n)
            hour = rng.integers(hours, size=n)
            start = pa.array(start_ms + hour * 3_600_000, pa.timestamp("ms", "UTC"))
            end = pa.array(start_ms + (hour + 1) * 3_600_000, pa.timestamp("ms", "UTC"))
            item = rng.choice(4, n, p=[0.94, 0.02, 0.01, 0.03])
            amount = np.round(rng.gamma(2.0, 1.5, n), 8)
            cost = np.round(amount * rng.uniform(0.01, 4.0, n), 10)
            cost = np.where(item == 2, -cost / 10, cost)
            columns: dict[str, Any] = {
                "bill_payer_account_id": dictionary(np.zeros(n, np.int32), [payer]),
                "bill_billing_period_start_date": pa.array(
                    np.full(n, start_ms), pa.timestamp("ms", "UTC")
                ),
                "line_item_usage_account_id": dictionary(res % 3, account),
                "line_item_line_item_type": dictionary(item, item_types),
                "line_item_usage_start_date": start,
                "line_item_usage_end_date": end,
                "line_item_product_code": dictionary(product[res], [p[0] for p in PRODUCTS]),
                "line_item_usage_type": dictionary(res, usage_types),
                "line_item_resource_id": dictionary(res, resource_ids),
                "line_item_usage_amount": pa.array(amount),
                "line_item_currency_code": dictionary(np.zeros(n, np.int32), ["USD"]),
                "line_item_unblended_cost": pa.array(cost),
                "product_product_name": dictionary(product[res], [p[1] for p in PRODUCTS]),
                "product_instance_type": dictionary(res, instance_types),
                "product_region": dictionary(region[res], list(REGIONS)),
                "pricing_unit": dictionary(res, units),
                "reservation_effective_cost": pa.array(np.where(item == 3, cost * 0.6, 0.0)),
            }
            for key in tag_keys:
                values, index = tag_values[key]
                columns[f"resource_tags_user_{key}"] = dictionary(index[res], values)
            table = pa.table(columns)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema, compression="snappy")
            writer.write_table(table, row_group_size=ROW_GROUP)
            done += n
        if writer is not None:
            writer.close()
        written += rows_here
    return {
        "files": len(paths),
        "rows": written,
        "mb": sum(p.stat().st_size for p in paths) / 1e6,
        "resources": n_res,
        "models": args.models,
        "tag_columns": len(tag_keys),
        "registry": str(registry),
    }


def fresh_database(args: argparse.Namespace) -> dict[str, str]:
    """Create an empty migrated database with the registry; return its URL."""
    from benchmarks.ingest import create_database

    return {"url": create_database(args.postgres, args.out, Path(args.registry).read_text())}


def drop_database(args: argparse.Namespace) -> dict[str, str]:
    """Drop the PostgreSQL database fresh_database made."""
    from benchmarks.ingest import drop

    drop(args.postgres, args.url)
    return {}


CHILDREN = {"generate": generate, "database": fresh_database, "drop": drop_database}

if __name__ == "__main__":
    sys.exit(main())
