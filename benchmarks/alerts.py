"""Time one budget-and-alert evaluation cycle: 5,000 budgets over 1,000,000 daily spend rows.

    python benchmarks/alerts.py                       # SQLite (a temporary file)
    python benchmarks/alerts.py --postgres URL        # also PostgreSQL (a throwaway database)

Prints the load time, the time of the budget evaluation alone, of a first poll cycle (what the
scheduler's poll evaluates: budgets with their drivers, the weekly unallocated and waste posts;
many alerts rendered and queued) and of a steady-state one (nothing new), of the daily anomaly
check, and how many Cost Explorer requests one scheduled poll makes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sys
import tempfile
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import Engine, create_engine, insert, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from bot.budgets.evaluate import evaluate_budgets
from bot.config import Settings
from bot.db.engine import make_engine, make_session_factory, session_scope, upgrade
from bot.db.schema import Budget, IngestionRun, MLModel, RegistrySetting, Team
from bot.ingest.rollup import rebuild_rollup
from bot.ingest.sources.cost_explorer import CostExplorerSource
from bot.poll.cycle import POLL_CHECKS, queue_posts
from bot.poll.plan import plan_alerts

MODELS, TEAMS = 2_000, 100
START, END = dt.date(2026, 9, 1), dt.date(2026, 12, 1)
AS_OF = dt.date(2026, 11, 20)
STAGES = ("training", "serving", "storage", "data", "serving")
COLUMNS = (
    "run_id",
    "day",
    "billing_period",
    "provider",
    "billing_account",
    "service",
    "resource_id",
    "charge_category",
    "model",
    "stage",
    "team",
    "attribution",
    "billed_cost",
    "effective_cost",
    "usage_quantity",
    "gpu_hours",
    "estimated",
)
SCALE = 10**10  # ExactDecimal's scale on SQLite


def _row(
    run_id: int,
    day: dt.date,
    charge: tuple[str, str],
    owner: tuple[str | None, str, str | None, str],
    cost: Decimal,
    usage: tuple[Decimal, Decimal],
) -> tuple[Any, ...]:
    """One ledger row in COLUMNS order: (service, resource), (model, stage, team, attribution)."""
    service, resource = charge
    model, stage, team, attribution = owner
    quantity, gpu_hours = usage
    period = day.replace(day=1)
    return (
        run_id,
        day,
        period,
        "AWS",
        "123456789012",
        service,
        resource,
        "Usage",
        model,
        stage,
        team,
        attribution,
        cost,
        cost,
        quantity,
        gpu_hours,
        False,
    )


def spend_rows(run_id: int) -> list[tuple[Any, ...]]:
    """Return 1,000,000 synthetic ledger rows (cost as Decimal)."""
    rng = random.Random(42)
    base = [Decimal(rng.randint(2_000, 50_000)) / 100 for _ in range(MODELS)]
    rows: list[tuple[Any, ...]] = []
    day = START
    while day < END:
        for m in range(MODELS):
            for s, stage in enumerate(STAGES):
                cost = (base[m] * Decimal(rng.randint(5, 40)) / 100).quantize(Decimal("0.0001"))
                owner: tuple[str | None, str, str | None, str]
                owner = (f"m{m:04d}", stage, f"t{m % TEAMS:03d}", "tag")
                usage = (Decimal(24), Decimal(8 if s == 0 else 0))
                rows.append(_row(run_id, day, ("Amazon EC2", f"i-{m:04d}-{s}"), owner, cost, usage))
        for u in range(990 if day == START else 989):
            cost = Decimal(rng.randint(1, 2_000)) / 100
            owner = (None, "other", None, "unallocated")  # no model: unallocated
            usage = (Decimal(1), Decimal(0))
            rows.append(_row(run_id, day, ("AWS Lambda", f"fn-{u}"), owner, cost, usage))
        day += dt.timedelta(days=1)
    return rows[:1_000_000]


def team_name(index: int, width: int = 3) -> str:
    """Return the benchmark name of a team: t000 (t0000 with width 4)."""
    return f"t{index:0{width}d}"


def insert_organisation(
    session: Session, *, teams: int, models: int, width: int = 3
) -> dict[str, int]:
    """Insert teams (t000, channel C0000, ...), models m0000... (model m in team m % teams) and
    the FinOps channel; return the models' ids by name."""
    session.execute(
        insert(Team),
        [{"name": team_name(t, width), "channel": f"C{t:0{width + 1}d}"} for t in range(teams)],
    )
    team_ids: dict[str, int] = dict(session.execute(text("SELECT name, id FROM teams")).all())
    session.execute(
        insert(MLModel),
        [
            {"name": f"m{m:04d}", "team_id": team_ids[team_name(m % teams, width)], "match": {}}
            for m in range(models)
        ],
    )
    session.add(RegistrySetting(key="finops_channel", value="C0FINOPS"))
    return dict(session.execute(text("SELECT name, id FROM models")).all())


def load(engine: Engine) -> tuple[int, float]:
    """Create the organisation, 5,000 budgets and 1M ledger rows; return (rows, seconds)."""
    factory = make_session_factory(engine)
    rng = random.Random(7)
    with session_scope(factory) as session:
        insert_organisation(session, teams=TEAMS, models=MODELS)
        budgets: list[dict[str, Any]] = []

        def add(scope: str, monthly: float, **kw: Any) -> None:
            budgets.append(
                {
                    "scope": scope,
                    "monthly_amount": Decimal(int(monthly)),
                    "thresholds": [50, 80, 100],
                    "forecast": True,
                    **kw,
                }
            )

        for m in range(MODELS):  # a model spends ~ base × 1.3 a day
            add(f"m:{m}", 0, model_name=f"m{m:04d}")
        for m in range(MODELS + 795):
            stage = STAGES[(m // MODELS) + 1]
            add("", 0, model_name=f"m{m % MODELS:04d}", stage=stage)
        for t in range(TEAMS):
            add("", 0, team_name=f"t{t:03d}")
            add("", 0, team_name=f"t{t:03d}", stage="training")
        for stage in ("training", "serving", "storage", "data", "other"):
            add("", 0, stage=stage)
        for b in budgets:
            parts = [
                f"model:{b['model_name']}" if b.get("model_name") else None,
                f"team:{b['team_name']}" if b.get("team_name") else None,
            ]
            head: str | None = next((p for p in parts if p), None)
            budget_stage = b.get("stage")
            b["scope"] = (
                f"{head}/stage:{budget_stage}"
                if head and budget_stage
                else head or f"stage:{budget_stage}"
            )
            # budgets sized so that a few percent cross a threshold on the measured day
            b["monthly_amount"] = Decimal(rng.randint(40, 400) * 100)
        session.execute(insert(Budget), budgets)
        run = IngestionRun(source="benchmark", location="synthetic", status="succeeded")
        session.add(run)
        session.flush()
        run_id = run.id
    assert len(budgets) == 5_000, len(budgets)
    rows = spend_rows(run_id)
    started = time.perf_counter()
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        if engine.dialect.name == "sqlite":
            sql = (
                f"INSERT INTO daily_spend ({', '.join(COLUMNS)}) VALUES "
                f"({', '.join('?' * len(COLUMNS))})"
            )
            for i in range(0, len(rows), 100_000):
                cursor.executemany(
                    sql,
                    [
                        (
                            *r[:1],
                            r[1].isoformat(),
                            r[2].isoformat(),
                            *r[3:12],
                            int(r[12] * SCALE),
                            int(r[13] * SCALE),
                            int(r[14] * 10**6),
                            int(r[15] * 10**6),
                            0,
                        )
                        for r in rows[i : i + 100_000]
                    ],
                )
        else:
            with cursor.copy(f"COPY daily_spend ({', '.join(COLUMNS)}) FROM STDIN") as copy:  # type: ignore[attr-defined]
                for row in rows:
                    copy.write_row(row)
        raw.commit()
    finally:
        raw.close()
    with engine.begin() as conn:
        conn.execute(text("ANALYZE"))
    return len(rows), time.perf_counter() - started


def build_rollup(engine: Engine) -> float:
    """Sum the raw-loaded ledger into spend_rollup, as ingestion does for the days it writes."""
    started = time.perf_counter()
    with session_scope(make_session_factory(engine)) as session:
        rebuild_rollup(session)
    with engine.begin() as conn:
        conn.execute(text("ANALYZE"))
    return time.perf_counter() - started


def timed(label: str, fn: Any) -> Any:
    started = time.perf_counter()
    result = fn()
    print(f"  {label}: {time.perf_counter() - started:.2f} s")
    return result


def bench(url: str) -> None:
    engine = make_engine(url)
    upgrade(engine)
    rows, seconds = load(engine)
    print(
        f"{engine.dialect.name}: loaded {rows:,} daily spend rows and 5,000 budgets "
        f"in {seconds:.1f} s"
    )
    with engine.connect() as conn:
        rollup_seconds = build_rollup(engine)
        rolled = conn.execute(text("SELECT count(*) FROM spend_rollup")).scalar_one()
    print(
        f"  rollup: {rolled:,} (day, model, team, stage) rows summed from the whole ledger in "
        f"{rollup_seconds:.1f} s (an ingestion sums only the days it touched)"
    )
    settings = Settings(database_url=url)
    factory = make_session_factory(engine)
    now = dt.datetime.combine(AS_OF + dt.timedelta(days=1), dt.time(6), dt.UTC)
    with session_scope(factory) as session:
        statuses = timed(
            "evaluate 5,000 budgets (SQL aggregation + forecasts)",
            lambda: evaluate_budgets(session=session, as_of=AS_OF),
        )
    print(f"    {sum(1 for s in statuses if s.month_to_date > 0):,} budgets with spend")
    for label in (
        "first poll cycle (every alert due is rendered and queued)",
        "steady-state poll cycle (nothing new to post)",
    ):

        def cycle() -> tuple[int, int]:
            with session_scope(factory) as session:
                report = plan_alerts(
                    session=session,
                    settings=settings,
                    as_of=AS_OF,
                    now=now,
                    checks=POLL_CHECKS,
                )
                return len(report.planned), queue_posts(session, report.planned)

        planned, queued = timed(label, cycle)
        print(f"    {planned:,} alerts planned, {queued:,} queued")

    def anomalies() -> int:
        with session_scope(factory) as session:
            report = plan_alerts(
                session=session, settings=settings, as_of=AS_OF, now=now, checks=("anomalies",)
            )
            return len(report.planned)

    found = timed("daily anomaly check (2,000 models, 5 stages, 28-day baselines)", anomalies)
    print(f"    {found:,} anomalies")
    engine.dispose()


class PagingCostExplorer:
    """A stand-in for the CE client: counts requests, pages like AWS (size is an assumption)."""

    def __init__(self, groups_per_day: int, page_size: int) -> None:
        self.groups_per_day, self.page_size, self.requests = groups_per_day, page_size, 0

    def get_cost_and_usage(self, **params: Any) -> dict[str, Any]:
        self.requests += 1
        start = dt.date.fromisoformat(params["TimePeriod"]["Start"])
        end = dt.date.fromisoformat(params["TimePeriod"]["End"])
        offset = int(params.get("NextPageToken") or 0)
        days = (end - start).days
        total = days * self.groups_per_day
        stop = min(total, offset + self.page_size)
        results: dict[int, list[dict[str, Any]]] = {}
        for i in range(offset, stop):
            results.setdefault(i // self.groups_per_day, []).append(
                {
                    "Keys": [f"ml:model$m{i % self.groups_per_day // 6:04d}", f"svc{i % 6}"],
                    "Metrics": {
                        "UnblendedCost": {"Amount": "1.5", "Unit": "USD"},
                        "AmortizedCost": {"Amount": "1.5", "Unit": "USD"},
                        "UsageQuantity": {"Amount": "1", "Unit": "Hrs"},
                    },
                }
            )
        page: dict[str, Any] = {
            "GroupDefinitions": params["GroupBy"],
            "ResultsByTime": [
                {
                    "TimePeriod": {
                        "Start": (start + dt.timedelta(days=d)).isoformat(),
                        "End": (start + dt.timedelta(days=d + 1)).isoformat(),
                    },
                    "Groups": groups,
                    "Estimated": False,
                }
                for d, groups in sorted(results.items())
            ],
        }
        if stop < total:
            page["NextPageToken"] = str(stop)
        return page


def cost_explorer_requests() -> None:
    settings = Settings()
    today = AS_OF + dt.timedelta(days=1)
    groups = MODELS * 6  # model tag × ~6 services
    for page_size in (5_000, 1_000):
        client = PagingCostExplorer(groups, page_size)
        source = CostExplorerSource(
            client,
            today - dt.timedelta(days=settings.poll_lookback_days),
            today,
            model_tag_key="ml:model",
        )
        data = source.read({"ml:model"})
        print(
            f"Cost Explorer: one poll re-reads {settings.poll_lookback_days} days × "
            f"{groups:,} groups (model tag × service) = {data.rows_read:,} rows in "
            f"{client.requests} requests at {page_size:,} groups a page "
            f"(${client.requests * 0.01:.2f} at $0.01 a request; AWS does not document the "
            "page size)"
        )
    print(
        "  with 4 polls a day that is the figure above × 4 × 30 a month; the whole window is "
        "one GetCostAndUsage query (DAILY, grouped by the model tag and SERVICE)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--postgres",
        default=os.environ.get("MLCOST_TEST_DATABASE_URL"),
        help="PostgreSQL server URL (a throwaway database is created there)",
    )
    parser.add_argument("--skip-sqlite", action="store_true")
    args = parser.parse_args()
    if not args.skip_sqlite:
        with tempfile.TemporaryDirectory() as folder:
            bench(f"sqlite:///{Path(folder) / 'bench.db'}")
    if args.postgres:
        name = f"mlcost_bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(args.postgres, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            bench(make_url(args.postgres).set(database=name).render_as_string(hide_password=False))
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()
    cost_explorer_requests()
    return 0


if __name__ == "__main__":
    sys.exit(main())
