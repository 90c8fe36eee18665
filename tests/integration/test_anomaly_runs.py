"""An anomaly names the training run that drove it: the run that rose most over its usual."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal

from sqlalchemy.orm import Session

from bot.anomalies.detect import find_anomalies
from bot.budgets.messages import AlertContext
from bot.slack.blocks.alerts import build_anomaly_alert
from tests.support.ledger import ingestion_run, spend_record
from tests.support.sample_registry import load_registry

SPIKE = dt.date(2026, 11, 20)
HOSTILE = "retry <!here> `loop`"


def add(session: Session, day: dt.date, cost: str, run: str | None, gpu: str = "0") -> None:
    ingested = ingestion_run(session, location="test")
    record = spend_record(
        ingested,
        day,
        cost,
        model="recsys",
        team="ranking",
        stage="training",
        resource_id=f"i-{run}",
        gpu_hours=Decimal(gpu),
    )
    record.run = run  # spend_record's own `run` is the ingestion run
    session.add(record)


def seed_month(session: Session, *, runs: bool) -> None:
    """Four steady weeks of two runs (or none), then a spike day."""
    load_registry(session)
    for back in range(1, 29):
        day = SPIKE - dt.timedelta(days=back)
        add(session, day, "100", "steady-a" if runs else None)
        add(session, day, "40", "steady-b" if runs else None)
    session.flush()


def test_the_spend_anomaly_names_the_run_with_the_largest_rise(session: Session) -> None:
    seed_month(session, runs=True)
    add(session, SPIKE, "160", "steady-a")  # +60 over its usual 100
    add(session, SPIKE, "40", "steady-b")  # as usual
    add(session, SPIKE, "450", HOSTILE)  # new today: all of it is a rise
    session.flush()
    anomalies = find_anomalies(session=session, day=SPIKE, min_excess=Decimal(50))
    by_scope = {a.scope: a for a in anomalies if a.kind == "spend"}
    assert set(by_scope) == {"model:recsys", "stage:training"}
    for anomaly in by_scope.values():
        assert anomaly.run is not None
        assert (anomaly.run.run, anomaly.run.value, anomaly.run.increase) == (
            HOSTILE,
            Decimal(450),
            Decimal(450),
        )

    text, blocks = build_anomaly_alert(by_scope["model:recsys"], AlertContext(channel="C1"))
    body = blocks[1]["text"]["text"]
    # the run is the top driver, so the drivers' list names it and no second line repeats it
    assert "• run `retry &lt;!here&gt; ˋloopˋ`: $450" in body
    assert "Driven by run" not in body
    without_drivers = dataclasses.replace(by_scope["model:recsys"], drivers=[])
    _text, blocks = build_anomaly_alert(without_drivers, AlertContext(channel="C1"))
    named = "Driven by run `retry &lt;!here&gt; ˋloopˋ`: +$450 over its usual"
    assert f"{named} (new: not in the baseline)." in blocks[1]["text"]["text"]
    assert "<!here>" not in body and "<!here>" not in text
    assert text.endswith("Driven by run `retry &lt;!here&gt; ˋloopˋ`.")


def test_a_run_that_grew_beats_a_smaller_new_one(session: Session) -> None:
    seed_month(session, runs=True)
    add(session, SPIKE, "400", "steady-a")  # +300
    add(session, SPIKE, "40", "steady-b")
    add(session, SPIKE, "90", "newcomer")  # +90
    session.flush()
    (anomaly,) = [
        a
        for a in find_anomalies(session=session, day=SPIKE, min_excess=Decimal(50))
        if a.scope == "model:recsys"
    ]
    assert anomaly.run is not None and anomaly.run.run == "steady-a"
    assert anomaly.run.increase == Decimal(300)


def test_without_runs_the_anomaly_names_none(session: Session) -> None:
    seed_month(session, runs=False)
    add(session, SPIKE, "700", None)
    session.flush()
    anomalies = find_anomalies(session=session, day=SPIKE, min_excess=Decimal(50))
    assert anomalies and all(a.run is None for a in anomalies)
    text, blocks = build_anomaly_alert(anomalies[0], AlertContext(channel="C1"))
    assert "Driven by run" not in text + blocks[1]["text"]["text"]


def test_a_gpu_anomaly_names_the_run_by_its_gpu_hours(session: Session) -> None:
    load_registry(session)
    for back in range(1, 29):
        day = SPIKE - dt.timedelta(days=back)
        add(session, day, "100", "steady-a", gpu="10")
    # the same spend, four times the GPU-hours: cheaper capacity, a runaway job
    add(session, SPIKE, "60", "steady-a", gpu="6")
    add(session, SPIKE, "40", "orphan-pods", gpu="34")
    session.flush()
    (anomaly,) = find_anomalies(session=session, day=SPIKE, min_excess=Decimal(50))
    assert (anomaly.kind, anomaly.scope) == ("gpu", "model:recsys")
    assert anomaly.run is not None
    assert (anomaly.run.run, anomaly.run.increase) == ("orphan-pods", Decimal(34))
    _text, blocks = build_anomaly_alert(anomaly, AlertContext(channel="C1"))
    assert (
        "Driven by run `orphan-pods`: +34.0 GPU-hours over its usual (new"
        in blocks[1]["text"]["text"]
    )
