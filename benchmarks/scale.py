"""100x, on PostgreSQL: budget evaluation, a poll cycle's alert burst, `/mlcost model`, Athena.

    python benchmarks/scale.py --postgres postgresql+psycopg://postgres@127.0.0.1:5432/test
    python benchmarks/scale.py --postgres URL --budgets 50000 --alerting 5000 --months 4

Creates a throwaway database on the server (dropped at the end; `--database NAME` seeds one of
that name once and keeps it for later runs), seeds it in bulk with SQL (generate_series: no CUR
ingestion), and prints every figure of issue 24's item 3:

1. one evaluation of --budgets budgets (default 50,000; target < 2 s);
2. a poll cycle in which --alerting budgets alert at once (default 5,000; target < 5 s), and the
   steady cycle after it; then the same burst on a later poll of the week, when the week's
   waste digests are out and are not planned again;
3. `/mlcost model` time to the uploaded chart with four clients sending commands while charts
   render (benchmarks/commands.py --seeded against this database; target p99 < 1.5 s);
4. the size of the ledger per month, and what the Athena query reads: its SQL with 40 tag
   columns, and the bytes Athena would scan (the compressed size of the Parquet column chunks it
   names, measured on the CUR months in tests/data and scaled to 30M rows a month).

The ledger: --resources resources (default 50,000) over --models models (2,000), one usage row
per resource a day (a CUR month of 30M hourly line items groups to about 1.5M ledger rows), 4% of
resources unallocated, plus a tax and a credit line a day.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import subprocess
import sys
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow.parquet as pq  # noqa: E402
from sqlalchemy import Engine, create_engine, insert, text, update  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from benchmarks.alerts import insert_organisation  # noqa: E402
from bot.budgets.evaluate import evaluate_budgets  # noqa: E402
from bot.config import Settings  # noqa: E402
from bot.db.engine import make_engine, make_session_factory, session_scope, upgrade  # noqa: E402
from bot.db.schema import (  # noqa: E402
    Budget,
    IngestionRun,
    Owner,
)
from bot.ingest.rollup import rebuild_rollup  # noqa: E402
from bot.ingest.sources.athena import build_query  # noqa: E402
from bot.poll.cycle import POLL_CHECKS, queue_posts  # noqa: E402
from bot.poll.plan import plan_alerts  # noqa: E402

STAGES = ("training", "serving", "storage", "data")
ALL_STAGES = (*STAGES, "other")
PERIODS = ("monthly", "weekly", "quarterly", "daily")
AS_OF = dt.date(2026, 11, 20)
CUR_ROWS_A_MONTH = 30_000_000
TAG_KEYS = 40


def seed_registry(engine: Engine, *, models: int, teams: int, budgets: int) -> None:
    """Write teams, models (each with an owner) and budgets: every model and model×stage scope,
    then team and team×stage scopes until there are `budgets`, periods in turn."""
    factory = make_session_factory(engine)
    with session_scope(factory) as session:
        model_ids = insert_organisation(session, teams=teams, models=models, width=4)
        session.execute(
            insert(Owner), [{"model_id": i, "user_id": f"U{i:08d}"} for i in model_ids.values()]
        )
        scopes: list[tuple[str | None, str | None, str | None]] = []
        for m in range(models):
            scopes += [(f"m{m:04d}", None, None)] + [(f"m{m:04d}", None, s) for s in ALL_STAGES]
        scopes += [(None, None, s) for s in ALL_STAGES]
        t = 0
        while len(scopes) < budgets:
            scopes += [(None, f"t{t:04d}", None)] + [(None, f"t{t:04d}", s) for s in ALL_STAGES]
            t += 1
        rows = []
        for i, (model, team, stage) in enumerate(scopes[:budgets]):
            head = f"model:{model}" if model else f"team:{team}" if team else None
            scope = f"{head}/stage:{stage}" if head and stage else head or f"stage:{stage}"
            rows.append(
                {
                    "scope": scope,
                    "model_name": model,
                    "team_name": team,
                    "stage": stage,
                    # far above any spend: --alerting budgets are brought down after one evaluation
                    "monthly_amount": Decimal((50 + (i + 1) % 450) * 1_000_000),
                    "period": PERIODS[i % len(PERIODS)],
                    "thresholds": [50, 80, 100],
                    "forecast": True,
                }
            )
        session.execute(insert(Budget), rows)


LEDGER_SQL = """
INSERT INTO daily_spend (run_id, day, billing_period, provider, billing_account, sub_account,
    service, usage_type, region, resource_id, instance_type, charge_category, currency, model,
    stage, team, model_tag_value, attribution, billed_cost, effective_cost, usage_quantity,
    gpu_hours, estimated, node_offset)
SELECT :run, d::date, date_trunc('month', d)::date, 'AWS', '123456789012', '2109' || (r.id % 10),
    r.service, r.usage_type, 'us-east-1', 'res-' || r.id, r.instance_type, 'Usage', 'USD', r.model,
    r.stage, r.team, r.model, r.attribution,
    round(r.base * (80 + ((r.id * 31 + (d::date - date '2026-01-01') * 17) % 41)) / 100, 4),
    round(r.base * (80 + ((r.id * 31 + (d::date - date '2026-01-01') * 17) % 41)) / 100, 4) * 0.9,
    24, CASE WHEN r.stage = 'training' THEN 24 ELSE 0 END, false, false
FROM generate_series(CAST(:start AS date), CAST(:last AS date), interval '1 day') AS d
CROSS JOIN bench_resources AS r
"""

FEES_SQL = """
INSERT INTO daily_spend (run_id, day, billing_period, provider, billing_account, service,
    charge_category, currency, stage, attribution, billed_cost, effective_cost, usage_quantity,
    gpu_hours, estimated, node_offset)
SELECT :run, d::date, date_trunc('month', d)::date, 'AWS', '123456789012', c.service,
    c.category, 'USD', 'other', 'unallocated', c.amount, c.amount, 0, 0, false, false
FROM generate_series(CAST(:start AS date), CAST(:last AS date), interval '1 day') AS d
CROSS JOIN (VALUES ('Tax', 'Tax', 120.5), ('Credit', 'AWS Credits', -75.25))
    AS c(category, service, amount)
"""


def seed_ledger(
    engine: Engine, *, models: int, teams: int, resources: int, start: dt.date, last: dt.date
) -> int:
    """Write one usage row per resource a day from start to last, and the daily fees."""
    rng = random.Random(11)
    services = {
        "training": ("Amazon Elastic Compute Cloud", "BoxUsage:p4d.24xlarge", "p4d.24xlarge"),
        "serving": ("Amazon SageMaker", "ml.g5.2xlarge-Hosting:Instance", "ml.g5.2xlarge"),
        "storage": ("Amazon Simple Storage Service", "TimedStorage-ByteHrs", None),
        "data": ("AWS Glue", "ETL-DPU-Hour", None),
    }
    allocated = resources * 96 // 100
    table = []
    for r in range(resources):
        if r < allocated:
            m = r % models
            stage = STAGES[(r // models) % len(STAGES)]
            model, team, attribution = f"m{m:04d}", f"t{m % teams:04d}", "tag"
        else:
            stage, model, team, attribution = "other", None, None, "unallocated"
        service, usage, instance = services.get(stage, ("AWS Lambda", "Request", None))
        base = Decimal(rng.randint(20, 4_000)) / 100
        table.append((r, model, team, stage, attribution, service, usage, instance, base))
    with engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TABLE bench_resources (id integer, model text, team text, stage text, "
                "attribution text, service text, usage_type text, instance_type text, "
                "base numeric)"
            )
        )
        raw = conn.connection.driver_connection
        with raw.cursor().copy("COPY bench_resources FROM STDIN") as copy:  # type: ignore[union-attr]
            for row in table:
                copy.write_row(row)
        run = conn.execute(
            insert(IngestionRun)
            .values(source="benchmark", location="synthetic", status="succeeded")
            .returning(IngestionRun.id)
        ).scalar_one()
        params = {"run": run, "start": start, "last": last}
        written = conn.execute(text(LEDGER_SQL), params).rowcount
        written += conn.execute(text(FEES_SQL), params).rowcount
        conn.execute(text("DROP TABLE bench_resources"))
    return int(written)


def timed(fn: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def bring_down(engine: Engine, statuses: list[Any], alerting: int) -> int:
    """Lower the amounts of `alerting` spending budgets to 90% of their period so far (one
    actual alert each, forecasts off); return how many were changed."""
    spending = [s for s in statuses if s.month_to_date > 0][:alerting]
    with session_scope(make_session_factory(engine)) as session:
        session.execute(
            update(Budget),
            [
                {
                    "id": s.budget_id,
                    "monthly_amount": (s.month_to_date * Decimal("0.9")).quantize(Decimal("0.01")),
                    "forecast": False,
                }
                for s in spending
            ],
        )
    return len(spending)


def athena_figures(ledger_rows_a_month: int) -> None:
    """Print the Athena query with 40 tag columns and the bytes it would scan at 30M rows."""
    tags = {f"tag{i:02d}": f"resource_tags_user_tag{i:02d}" for i in range(TAG_KEYS)}
    sql = build_query("cur", "cur_table", "2026-11", tags)
    files = sorted((ROOT / "tests" / "data").glob("*CUR-*.parquet"))
    referenced_total, all_total, rows = 0, 0, 0
    for path in files:
        meta = pq.ParquetFile(path).metadata
        rows += meta.num_rows
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for c in range(group.num_columns):
                column = group.column(c)
                size = column.total_compressed_size
                all_total += size
                if column.path_in_schema in sql:
                    referenced_total += size
    per_row_named = referenced_total / rows
    per_row_all = all_total / rows
    shown = build_query("cur", "cur_table", "2026-11", dict(list(tags.items())[:2]))
    print(f"\nAthena (bot/ingest/sources/athena.py build_query; with 2 of the {TAG_KEYS} tags):")
    print("  " + shown.replace("\n", "\n  "))
    print(f"  with all {TAG_KEYS} tag columns the query is {len(sql):,} characters")
    print(
        f"  measured on tests/data ({len(files)} CUR months, {rows:,} rows, Parquet/snappy): the "
        f"columns the query names take {per_row_named:.1f} bytes a row compressed, of "
        f"{per_row_all:.1f} for all {meta.num_columns} columns"
    )
    print(
        f"  at {CUR_ROWS_A_MONTH:,} CUR rows a month Athena scans about "
        f"{per_row_named * CUR_ROWS_A_MONTH / 1e9:.2f} GB of the month's partition (the 40 tag "
        f"columns add what they hold; ${per_row_named * CUR_ROWS_A_MONTH / 1e12 * 5:.4f} at "
        f"$5/TB) and returns about {ledger_rows_a_month:,} grouped rows: "
        f"{-(-ledger_rows_a_month // 1000):,} GetQueryResults pages of 1,000"
    )


def seed(engine: Engine, args: argparse.Namespace, start: dt.date, last: dt.date) -> None:
    """Write the registry, the ledger and its rollup; print what was written and how fast."""
    (_, seconds) = timed(
        lambda: seed_registry(engine, models=args.models, teams=args.teams, budgets=args.budgets)
    )
    print(
        f"registry: {args.teams:,} teams, {args.models:,} models, {args.budgets:,} budgets "
        f"in {seconds:.1f} s"
    )
    written, seconds = timed(
        lambda: seed_ledger(
            engine,
            models=args.models,
            teams=args.teams,
            resources=args.resources,
            start=start,
            last=last,
        )
    )
    print(f"ledger: {written:,} rows ({start} to {last}) in {seconds:.1f} s")
    with session_scope(make_session_factory(engine)) as session:
        (_, seconds) = timed(lambda: rebuild_rollup(session))
    # what autovacuum does after a bulk load (this server runs with autovacuum off): statistics,
    # and the visibility map that lets covering indexes answer without the table
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
    with engine.begin() as conn:
        rolled = conn.execute(text("SELECT count(*) FROM spend_rollup")).scalar_one()
        size = conn.execute(text("SELECT pg_total_relation_size('daily_spend')")).scalar_one()
    days = (last - start).days + 1
    print(
        f"rollup: {rolled:,} rows in {seconds:.1f} s; daily_spend with its indexes "
        f"{size / 1e9:.2f} GB ({size / days * 30 / 1e9:.2f} GB a month)"
    )


def reset(engine: Engine) -> None:
    """Undo what an earlier run changed in a kept database: amounts, forecasts, the outbox."""
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM outbox"))
        conn.execute(
            text("UPDATE budgets SET forecast = true, monthly_amount = (50 + id % 450) * 1000000")
        )
    # what autovacuum would do after rewriting every budget (this server runs without it): each
    # reuse would otherwise leave 50,000 more dead rows for evaluation to read past
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE budgets"))
        conn.execute(text("VACUUM ANALYZE outbox"))
    print("reusing the seeded database (budgets and outbox reset and vacuumed)")


def bench(url: str, args: argparse.Namespace, *, seed_it: bool) -> None:
    engine = make_engine(url)
    upgrade(engine)
    last = AS_OF
    start = dt.date(AS_OF.year, AS_OF.month, 1)
    for _ in range(args.months - 1):
        start = (start - dt.timedelta(days=1)).replace(day=1)
    if seed_it:
        seed(engine, args, start, last)
    else:
        reset(engine)
    factory = make_session_factory(engine)
    settings = Settings(database_url=url)
    now = dt.datetime.combine(AS_OF + dt.timedelta(days=1), dt.time(6), dt.UTC)

    def evaluate() -> list[Any]:
        with session_scope(factory) as session:
            return evaluate_budgets(session=session, as_of=AS_OF)

    figures = []
    for _ in range(args.repeat):
        statuses, seconds = timed(evaluate)
        figures.append(seconds)
    print(
        f"\n1. evaluate {len(statuses):,} budgets: "
        + ", ".join(f"{s:.2f} s" for s in figures)
        + f" (target < 2 s; {sum(1 for s in statuses if s.month_to_date > 0):,} with spend)"
    )
    changed = bring_down(engine, statuses, args.alerting)

    def cycle() -> tuple[int, int]:
        with session_scope(factory) as session:
            report = plan_alerts(
                session=session, settings=settings, as_of=AS_OF, now=now, checks=POLL_CHECKS
            )
            return len(report.planned), queue_posts(session, report.planned)

    for label in ("first poll cycle", "steady poll cycle"):
        (planned, queued), seconds = timed(cycle)
        print(
            f"2. {label} ({changed:,} budgets brought over a threshold): {seconds:.2f} s, "
            f"{planned:,} alerts planned, {queued:,} queued (target < 5 s)"
        )
    # the same burst on a later poll of the week: its waste digests are out (planned once a
    # week), so the cycle is the budgets' alerts and the unallocated check
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM outbox WHERE kind LIKE 'budget_%'"))
    (planned, queued), seconds = timed(cycle)
    print(
        f"2. the burst again on a later poll of the week (waste digests already out): "
        f"{seconds:.2f} s, {planned:,} alerts planned, {queued:,} queued (target < 5 s)"
    )
    engine.dispose()
    if not args.skip_commands:
        print("\n3. /mlcost model (benchmarks/commands.py --seeded):", flush=True)
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "commands.py"),
                "--database-url",
                url,
                "--seeded",
                "--today",
                str(AS_OF),
                "--clients",
                "4",
            ],
            check=True,
        )
    athena_figures(args.resources * 30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--postgres",
        default=os.environ.get("MLCOST_TEST_DATABASE_URL"),
        help="PostgreSQL server URL (a throwaway database is created there)",
    )
    parser.add_argument("--budgets", type=int, default=50_000)
    parser.add_argument("--alerting", type=int, default=5_000)
    parser.add_argument("--models", type=int, default=2_000)
    parser.add_argument("--teams", type=int, default=200)
    parser.add_argument("--resources", type=int, default=50_000)
    parser.add_argument("--months", type=int, default=4, help="months of ledger up to as_of")
    parser.add_argument("--repeat", type=int, default=3, help="budget evaluations timed")
    parser.add_argument("--skip-commands", action="store_true")
    parser.add_argument(
        "--database",
        help="seed a database of this name once and keep it; later runs reuse it (reset budgets "
        "and outbox) instead of seeding again",
    )
    args = parser.parse_args()
    if not args.postgres:
        parser.error("--postgres URL (or MLCOST_TEST_DATABASE_URL) is required")
    uptime = os.getloadavg()
    print(f"load average before: {uptime[0]:.2f} {uptime[1]:.2f} {uptime[2]:.2f}")
    name = args.database or f"mlcost_scale_{uuid.uuid4().hex[:8]}"
    admin = create_engine(args.postgres, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        exists = conn.execute(
            text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
        ).first()
        if not exists:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = make_url(args.postgres).set(database=name).render_as_string(hide_password=False)
        bench(url, args, seed_it=not exists)
    finally:
        if not args.database:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    uptime = os.getloadavg()
    print(f"load average after: {uptime[0]:.2f} {uptime[1]:.2f} {uptime[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
