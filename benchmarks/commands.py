"""Benchmark `/mlcost model`: ack latency and time to the uploaded chart, through the real app.

    python benchmarks/commands.py [--models 200] [--days 365] [--database-url URL]
                                  [--charts 20] [--clients 4] [--per-client 15]

Seeds one year of daily spend (four stages and two services a day) for 200 models, serves the
real Bolt app over HTTP with its WebClient on the local fake Slack Web API, then measures:

1. time to chart: one `/mlcost model <m>` at a time, from sending the signed request to the
   fake recording `files.completeUploadExternal` (query, render, upload all included);
2. under load: several clients sending `/mlcost model <m>` back to back, so acks are answered
   while charts render in the background; ack latency, each command's time to its chart (a
   burst: these wait in line) and how many charts a second the app delivers;
3. time to chart with several clients that each send the next command when its chart arrived,
   so charts render while the others' commands arrive.

Targets (issues 3 and 24): ack p99 under 100 ms; chart delivered under 1.5 s (p99), alone and
with four clients.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import sys
import tempfile
import threading
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import os  # noqa: E402

from sqlalchemy import insert, select  # noqa: E402

from bot.bootstrap import AppServices  # noqa: E402
from bot.config import SecretStr, Settings  # noqa: E402
from bot.db.engine import make_engine, make_session_factory, session_scope, upgrade  # noqa: E402
from bot.db.schema import Budget, DailySpend, IngestionRun, MLModel, Owner, Team  # noqa: E402
from bot.ingest.rollup import rebuild_rollup  # noqa: E402
from bot.slack.app import build_app  # noqa: E402
from bot.slack.charts.spend_chart import start_render_processes, stop_render_processes  # noqa: E402
from bot.slack.client import make_web_client  # noqa: E402
from bot.web.server import make_http_server  # noqa: E402
from tests.support.fake_slack import FakeSlack  # noqa: E402
from tests.support.slack_app import SlackHarness, install_settling_executor  # noqa: E402
from tests.support.slack_requests import SECRET  # noqa: E402

TODAY = dt.date(2026, 11, 20)
STAGES = {
    "training": ("Amazon Elastic Compute Cloud", 0.55),
    "serving": ("Amazon SageMaker", 0.25),
    "storage": ("Amazon Simple Storage Service", 0.15),
    "data": ("AWS Glue", 0.05),
}


def seed(factory: object, models: int, days: int) -> int:
    """Insert teams, models, budgets and a year of daily spend; return the rows written."""
    rng = random.Random(7)
    rows = 0
    with session_scope(factory) as session:  # type: ignore[arg-type]
        teams = [Team(name=f"team-{i:02d}", channel=f"C0TEAM{i:04d}") for i in range(20)]
        session.add_all(teams)
        session.flush()
        names = [f"model-{i:03d}" for i in range(models)]
        for i, name in enumerate(names):
            model = MLModel(name=name, team_id=teams[i % 20].id, match={})
            model.owners.append(Owner(user_id=f"U{i:08d}"))
            session.add(model)
            session.add(
                Budget(
                    scope=f"model:{name}",
                    model_name=name,
                    monthly_amount=Decimal(rng.randint(5, 50) * 1000),
                    thresholds=[50, 80, 100],
                    forecast=True,
                )
            )
        run = IngestionRun(source="benchmark", location="synthetic", status="done")
        session.add(run)
        session.flush()
        start = TODAY - dt.timedelta(days=days - 1)
        batch: list[dict[str, object]] = []
        for index, name in enumerate(names):
            base = rng.uniform(50, 2000)
            for d in range(days):
                day = start + dt.timedelta(days=d)
                weekday = 0.6 if day.weekday() >= 5 else 1.0
                for stage, (service, share) in STAGES.items():
                    cost = Decimal(str(round(base * share * weekday * rng.uniform(0.8, 1.2), 4)))
                    batch.append(
                        {
                            "run_id": run.id,
                            "day": day,
                            "billing_period": day.replace(day=1),
                            "provider": "AWS",
                            "billing_account": "bench",
                            "service": service,
                            "resource_id": f"{name}-{stage}",
                            "model": name,
                            "stage": stage,
                            "team": f"team-{index % 20:02d}",
                            "attribution": "tag",
                            "billed_cost": cost,
                            "effective_cost": cost,
                            "gpu_hours": Decimal(8) if stage == "training" else Decimal(0),
                            "charge_category": "Usage",
                            "estimated": False,
                        }
                    )
            if len(batch) >= 20_000:
                session.execute(insert(DailySpend), batch)
                rows += len(batch)
                batch = []
        if batch:
            session.execute(insert(DailySpend), batch)
            rows += len(batch)
        rebuild_rollup(session)  # what an ingestion does for the days it writes
    return rows


def percentile(values: list[float], pct: float) -> float:
    """Return the pct-th percentile (nearest rank)."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--database-url")
    parser.add_argument(
        "--seeded",
        action="store_true",
        help="the database is seeded already (benchmarks/scale.py): use its models, write nothing",
    )
    parser.add_argument("--today", type=dt.date.fromisoformat, default=TODAY)
    parser.add_argument("--charts", type=int, default=20, help="sequential chart timings")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients for acks")
    parser.add_argument("--per-client", type=int, default=15, help="commands per client")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="mlcost-bench-commands-"))
    url = args.database_url or f"sqlite:///{folder / 'bench.db'}"
    engine = make_engine(url)
    upgrade(engine)
    factory = make_session_factory(engine)
    if args.seeded:
        with session_scope(factory) as session:
            names = list(session.scalars(select(MLModel.name).order_by(MLModel.name)))
        print(f"{len(names):,} models in the seeded {engine.dialect.name} database")
    else:
        started = time.perf_counter()
        rows = seed(factory, args.models, args.days)
        names = [f"model-{i:03d}" for i in range(args.models)]
        print(
            f"seeded {rows:,} ledger rows ({args.models} models x {args.days} days x 4 stages) "
            f"in {time.perf_counter() - started:.1f} s on {engine.dialect.name}"
        )

    fake = FakeSlack().start()
    settings = Settings(
        database_url=url,
        slack_bot_token=SecretStr("xoxb-bench"),
        slack_signing_secret=SecretStr(SECRET),
        slack_api_url=fake.url,
    )
    services = AppServices(
        settings=settings,
        session_factory=factory,
        client=make_web_client(settings),
        clock=lambda: dt.datetime.combine(args.today, dt.time(12), dt.UTC),
    )
    # What `mlcost serve` does at start-up: chart worker processes that warm matplotlib.
    start_render_processes(max(1, (os.cpu_count() or 2) - 1))
    app = build_app(services)
    server = make_http_server(app, services, "127.0.0.1", 0)
    server.start()
    harness = SlackHarness(  # over HTTP: the ack latency measured includes the server
        app=app,
        listeners=install_settling_executor(app),
        fake=fake,
        services=services,
        session_factory=factory,
        url=f"http://127.0.0.1:{server.port}/",
        over_http=True,
    )

    # 1. Time to the uploaded chart, one command at a time.
    chart_times: list[float] = []
    sequential_acks: list[float] = []
    for i in range(args.charts + 1):
        before = len(fake.calls_to("files.completeUploadExternal"))
        t0 = time.monotonic()
        result = harness.command(f"model {names[i * 7 % len(names)]}")
        assert result.status == 200, result
        done = fake.wait_for("files.completeUploadExternal", before + 1, timeout=30)[-1]
        if i:  # the first one warms the database caches
            chart_times.append(done.at - t0)
            sequential_acks.append(result.elapsed)
    upload = fake.calls_to("upload/F123")[-1]
    print(f"\nchart PNG: {len(upload.body):,} bytes")
    print(
        f"time to uploaded chart ({len(chart_times)} sequential `/mlcost model`): "
        f"p50 {statistics.median(chart_times) * 1000:.0f} ms, "
        f"p99 {percentile(chart_times, 99) * 1000:.0f} ms, "
        f"max {max(chart_times) * 1000:.0f} ms  (target < 1500 ms)"
    )

    # 2. Ack latency while charts render: clients sending commands back to back.
    # Each command names a channel of its own: its chart is the upload completed there.
    acks: list[float] = []
    sent_at: dict[str, float] = {}
    lock = threading.Lock()
    expected = len(fake.calls_to("files.completeUploadExternal"))

    def client(seed_: int) -> None:
        rng = random.Random(seed_)
        for n in range(args.per_client):
            channel = f"CBENCH{seed_:02d}{n:04d}"
            t0 = time.monotonic()
            result = harness.command(f"model {rng.choice(names)}", channel=channel)
            with lock:
                acks.append(result.elapsed)
                sent_at[channel] = t0
            time.sleep(rng.uniform(0, 0.05))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
    t0 = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sent = time.perf_counter() - t0
    total = args.clients * args.per_client
    fake.wait_for("files.completeUploadExternal", expected + total, timeout=600)
    drained = time.perf_counter() - t0
    all_acks = acks + sequential_acks
    loaded = [
        call.at - sent_at[call.params["channel_id"]]
        for call in fake.calls_to("files.completeUploadExternal")
        if call.params.get("channel_id") in sent_at
    ]
    print(
        f"time to uploaded chart, {args.clients} clients sending back to back without waiting "
        f"({len(loaded)} charts queued in a burst): p50 {statistics.median(loaded) * 1000:.0f} ms,"
        f" p99 {percentile(loaded, 99) * 1000:.0f} ms, max {max(loaded) * 1000:.0f} ms "
        "(queueing: bounded by the charts/s below)"
    )
    print(
        f"ack latency ({len(all_acks)} signed requests, {args.clients} concurrent clients, "
        f"charts rendering meanwhile): p50 {statistics.median(all_acks) * 1000:.1f} ms, "
        f"p99 {percentile(all_acks, 99) * 1000:.1f} ms, max {max(all_acks) * 1000:.1f} ms  "
        f"(target p99 < 100 ms)"
    )
    print(
        f"  {total} commands sent in {sent:.1f} s; all {total} charts uploaded after "
        f"{drained:.1f} s ({total / drained:.1f} charts/s)"
    )

    # 3. Clients that each wait for their chart before sending the next command (people do):
    # `--clients` commands in flight at most, so charts always render while others are sent.
    waited: list[float] = []

    def waiting_client(seed_: int) -> None:
        rng = random.Random(1000 + seed_)
        for n in range(args.per_client):
            channel = f"CWAIT{seed_:02d}{n:04d}"
            t0 = time.monotonic()
            harness.command(f"model {rng.choice(names)}", channel=channel)

            def arrived(channel: str = channel) -> bool:
                return any(
                    c.method == "files.completeUploadExternal"
                    and c.params.get("channel_id") == channel
                    for c in fake.calls
                )

            assert fake.wait_until(arrived, timeout=60), channel
            done = next(
                c.at
                for c in fake.calls_to("files.completeUploadExternal")
                if c.params.get("channel_id") == channel
            )
            with lock:
                waited.append(done - t0)
            time.sleep(rng.uniform(0, 0.05))

    threads = [threading.Thread(target=waiting_client, args=(n,)) for n in range(args.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(
        f"time to uploaded chart, {args.clients} clients each sending its next command when its "
        f"chart arrived ({len(waited)} charts): p50 {statistics.median(waited) * 1000:.0f} ms, "
        f"p99 {percentile(waited, 99) * 1000:.0f} ms, max {max(waited) * 1000:.0f} ms  "
        "(target < 1500 ms)"
    )
    server.close()
    fake.stop()
    engine.dispose()
    stop_render_processes()
    ok = (
        percentile(all_acks, 99) < 0.1
        and percentile(chart_times, 99) < 1.5
        and percentile(waited, 99) < 1.5
    )
    print("\ntargets met" if ok else "\ntargets NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
