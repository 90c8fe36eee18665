"""Time `mlcost ingest opencost` on a large /allocation answer, and the month's chargeback.

    python benchmarks/opencost.py [--pods 2000] [--days 30] [--database-url URL]

Builds an answer of `days` daily sets, each with `pods` labelled GPU and CPU allocations over 20
namespaces plus the cluster's `__idle__` and `__unmounted__` lines (the shape OpenCost answers
with `aggregate=pod`), writes it to a file, then times reading and ingesting it into a fresh
database (a temporary SQLite file by default; `--database-url` must name an empty one), checks
the ledger against the answer's own sum, and times `report chargeback` for the month (median of
five). Prints peak RSS.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import resource
import statistics
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import func, select

from bot.db.engine import make_engine, make_session_factory, session_scope, upgrade
from bot.db.schema import DailySpend
from bot.ingest.ledger import ingest
from bot.ingest.sources.opencost import OpenCostSource
from bot.periods import month_period
from bot.registry.spec import parse_registry
from bot.registry.sync import import_registry
from bot.spend.chargeback import chargeback_report, load_chargeback_policy

START = dt.date(2026, 11, 1)
NAMESPACES = 20
TEAMS = ("ranking", "nlp", "vision", "risk")


def registry() -> str:
    teams = "\n".join(f"  - {{name: {t}}}" for t in TEAMS)
    models = "\n".join(
        f"  - {{name: model-{n}, team: {TEAMS[n % len(TEAMS)]}, match: {{namespace: ns-{n}}}}}"
        for n in range(NAMESPACES)
    )
    return (
        f"teams:\n{teams}\nmodels:\n{models}\n"
        "chargeback: {split: proportional, pools: {idle: evenly}}\n"
    )


def allocation(
    name: str, day: dt.date, namespace: str | None, cost: Decimal, gpus: int
) -> dict[str, Any]:
    start = f"{day}T00:00:00Z"
    end = f"{day + dt.timedelta(days=1)}T00:00:00Z"
    props: dict[str, Any] = {"cluster": "eks-bench"}
    if namespace is not None:
        props.update(namespace=namespace, labels={"ml_run": f"{namespace}-run-{day.day % 3}"})
    return {
        "name": name,
        "properties": props,
        "window": {"start": start, "end": end},
        "start": start,
        "end": end,
        "minutes": 1440,
        "gpuHours": gpus * 24,
        "cpuCost": str(cost),
        "totalCost": str(cost),
    }


def build_answer(pods: int, days: int, rng: random.Random) -> tuple[str, Decimal]:
    sets, total = [], Decimal(0)
    for d in range(days):
        day = START + dt.timedelta(days=d)
        items = {}
        for p in range(pods):
            cost = Decimal(rng.randint(1, 500_000)) / 1000
            gpus = 1 if p % 5 == 0 else 0
            name = f"ns-{p % NAMESPACES}/pod-{p}"
            items[name] = allocation(name, day, f"ns-{p % NAMESPACES}", cost, gpus)
            total += cost
        for name, cost in (("__idle__", Decimal("812.5")), ("__unmounted__", Decimal("3.25"))):
            items[name] = allocation(name, day, None, cost, 0)
            total += cost
        sets.append(items)
    return json.dumps({"code": 200, "status": "success", "data": sets}), total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        text, expected = build_answer(args.pods, args.days, random.Random(14))
        path = Path(folder) / "allocation.json"
        path.write_text(text)
        print(f"answer: {args.days} days x {args.pods + 2} allocations, {len(text) / 1e6:.1f} MB")
        engine = make_engine(args.database_url or f"sqlite:///{folder}/bench.db")
        upgrade(engine)
        factory = make_session_factory(engine)
        with session_scope(factory) as session:
            if session.scalar(select(func.count()).select_from(DailySpend)):
                raise SystemExit("the database holds ledger rows; give an empty one")
            import_registry(parse_registry(registry()), session=session, actor="benchmark")
        started = time.perf_counter()
        with session_scope(factory) as session:
            report = ingest(OpenCostSource(str(path)), session=session)
        took = time.perf_counter() - started
        with session_scope(factory) as session:
            booked = session.scalar(select(func.sum(DailySpend.billed_cost)))
        assert booked == expected, (booked, expected)
        print(
            f"ingest: {report.rows_read:,} allocations in {took:.2f} s "
            f"({report.rows_read / took:,.0f}/s), ledger total equals the answer's: {booked}"
        )
        with session_scope(factory) as session:
            policy = load_chargeback_policy(session=session)
            taken = []
            for _ in range(5):
                begin = time.perf_counter()
                [charge] = chargeback_report(
                    session=session, period=month_period(f"{START:%Y-%m}"), policy=policy
                )
                taken.append((time.perf_counter() - begin) * 1000)
        assert charge.total == charge.ledger_total
        print(
            f"report chargeback {START:%Y-%m}: {statistics.median(taken):.1f} ms "
            f"(median of 5), {len(charge.teams)} teams, total {charge.total}"
        )
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS {peak:,.0f} MB")
        engine.dispose()


if __name__ == "__main__":
    main()
