"""Time the run queries on the real CUR months: `report spend --by run` and a model's top runs.

    python benchmarks/runs.py [CUR_FILE ...]     # default: the three workshop months in tests/data

Ingests the files into a temporary SQLite ledger with the CUR's `Name` tag declared as a run tag
key (the files have no `ml:run`) and the `workload` tag as the model tag, then prints the ingest
time, the ledger's rows, and the median of five timings of each query per month.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.db.engine import make_engine, make_session_factory, session_scope, upgrade
from bot.ingest.ledger import ingest
from bot.ingest.sources.cur import CurSource
from bot.periods import month_period
from bot.registry.spec import parse_registry
from bot.registry.sync import import_registry
from bot.spend.runs import model_top_runs, run_report

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
REGISTRY = """\
teams: [{name: platform, owners: [U0PPP111]}]
models:
  - {name: baseload, team: platform, owners: [U0PPP111]}
  - {name: daytime, team: platform, owners: [U0PPP111]}
attribution:
  model_tag_keys: [workload]
  run_tag_keys: ["ml:run", Name]
"""


def median_ms(fn: object, times: int = 5) -> float:
    """Return the median wall time of calling fn, in milliseconds."""
    taken = []
    for _ in range(times):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        taken.append((time.perf_counter() - start) * 1000)
    return statistics.median(taken)


def main(files: list[str]) -> None:
    files = files or [str(p) for p in sorted(DATA.glob("*2018-WorkshopCUR-00001.snappy.parquet"))]
    with tempfile.TemporaryDirectory() as folder:
        engine = make_engine(f"sqlite:///{folder}/runs.db")
        upgrade(engine)
        factory = make_session_factory(engine)
        with session_scope(factory) as session:
            import_registry(parse_registry(REGISTRY), session=session, actor="benchmark")
        started = time.perf_counter()
        with session_scope(factory) as session:
            report = ingest(CurSource(files), session=session)
        print(
            f"ingested {report.rows_read:,} CUR rows into {report.rows_written:,} ledger rows "
            f"in {time.perf_counter() - started:.2f} s"
        )
        with session_scope(factory) as session:
            for month in ("2018-10", "2018-11", "2018-12"):
                period = month_period(month)
                runs = run_report(session=session, period=period)
                by_run = median_ms(lambda p=period: run_report(session=session, period=p))
                top = median_ms(
                    lambda p=period: model_top_runs(
                        session=session, model="baseload", start=p.start, end=p.end
                    )
                )
                print(
                    f"{month}: report spend --by run {by_run:.1f} ms ({len(runs.lines)} lines); "
                    f"top runs of a model {top:.1f} ms"
                )
        engine.dispose()


if __name__ == "__main__":
    main(sys.argv[1:])
