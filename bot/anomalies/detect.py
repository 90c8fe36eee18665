"""Spend and GPU-hour anomalies: a day far above its robust trailing baseline.

The baseline is the median of the covered days among the previous 28 and the spread their median
absolute deviation (scaled to a standard deviation), so one past spike does not hide the next. A
covered day is one on which the ledger holds usage from some source: a day no source had data for
is unknown, not $0, and is left out; on a covered day, a scope without rows did spend $0. With
fewer covered days than MLCOST_ANOMALY_MIN_HISTORY_DAYS (14 by default) a day is not judged. A
day is an anomaly when it is more than 3.5 spreads (and at least 10 %) above the median *and* the
excess is worth at least a minimum number of dollars, so pennies never page anyone.

A spend anomaly names its drivers (bot/anomalies/drivers.py). Once an owner answers one
"Expected", that driver's rise up to the level it reached is taken off the scope's later days of
the same month before they are judged; what goes beyond it is judged as usual.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.anomalies.baseline import Baseline, robust_baseline
from bot.anomalies.drivers import (
    DRIVER_DIMENSIONS,
    Driver,
    Expectation,
    accepted_spend,
    rank_drivers,
)
from bot.db.schema import AnomalyExpectation, DailySpend, ValueMetric
from bot.money import CostBasis
from bot.spend.coverage import JUDGED_CHARGES, covered_days
from bot.spend.reports import cost_column

BASELINE_MAX_DAYS = 28
BASELINE_MIN_DAYS = 14  # MLCOST_ANOMALY_MIN_HISTORY_DAYS's default
WORKLOAD_SLACK = Decimal("1.25")  # GPU-hours may grow 25 % more than the workload before we ask
ZERO = Decimal(0)
# Anomalies judge usage only. A month's tax, a support plan's or a reservation's fee (Purchase),
# credits and adjustments land on one day (often the 1st) by how billing works, not by how the
# workload ran; judged, they would be an "unusual day" every month (JUDGED_CHARGES, which also
# says which days are covered: bot/spend/coverage.py).
# An Expected GPU-hour anomaly accepts the model's GPU-hours (this pseudo-dimension) up to a level
GPU_HOURS = "gpu_hours"
EXPECTED, NOT_EXPECTED = "expected", "not_expected"


def is_anomalous(
    value: Decimal,
    baseline: Baseline,
    *,
    min_excess: Decimal,
    min_history: int = BASELINE_MIN_DAYS,
) -> bool:
    """Return whether a value is far above its baseline and the excess matters."""
    if baseline.days < min_history:
        return False
    return value > baseline.ceiling and value - baseline.median >= min_excess


@dataclass(frozen=True)
class RunDriver:
    """The training run that drove an anomaly: its value that day and its rise over its usual."""

    run: str
    value: Decimal  # dollars (spend) or GPU-hours (gpu), like the anomaly's
    increase: Decimal


@dataclass(frozen=True)
class Anomaly:
    """An unusual day for a model or a stage."""

    kind: str  # "spend" or "gpu"
    scope: str  # "model:NAME" or "stage:NAME"
    day: dt.date
    value: Decimal  # dollars (spend) or GPU-hours (gpu)
    baseline: Baseline
    excess_cost: Decimal
    model_name: str | None = None
    resources: list[tuple[str, Decimal, bool]] = field(default_factory=list)  # (id, +value, new)
    drivers: list[Driver] = field(default_factory=list)  # spend: what rose most that day
    expected: Decimal = ZERO  # spend: the part owners answered Expected (not judged)
    run: RunDriver | None = None  # the run with the largest rise that day, when runs exist

    @property
    def dedupe_key(self) -> str:
        """Return the outbox key that makes this anomaly post once."""
        return f"anomaly:{self.kind}:{self.scope}:{self.day.isoformat()}"


def _series(rows: Sequence[tuple[str, dt.date, Decimal]]) -> dict[str, dict[dt.date, Decimal]]:
    series: dict[str, dict[dt.date, Decimal]] = {}
    for key, day, value in rows:
        series.setdefault(key, {})[day] = Decimal(value or 0)
    return series


def baseline_days(day: dt.date, covered: Sequence[dt.date]) -> list[dt.date]:
    """Return the covered days of `day`'s baseline window (the 28 days before it), oldest first."""
    start = day - dt.timedelta(days=BASELINE_MAX_DAYS)
    return [d for d in covered if start <= d < day]


def baseline_history(session: Session, *, day: dt.date, currency: str = "USD") -> list[dt.date]:
    """Return the covered days of `day`'s baseline window, read from the ledger."""
    start = day - dt.timedelta(days=BASELINE_MAX_DAYS)
    return covered_days(session, start=start, end=day - dt.timedelta(days=1), currency=currency)


def detect(
    series: Mapping[str, Mapping[dt.date, Decimal]],
    *,
    day: dt.date,
    history: Sequence[dt.date],
    min_excess: Decimal,
    min_history: int = BASELINE_MIN_DAYS,
    unit_cost: Mapping[str, Decimal] | None = None,
    expected: Mapping[str, Decimal] | None = None,
) -> list[tuple[str, Decimal, Baseline, Decimal]]:
    """Return (key, value, baseline, excess cost) for each series unusual on `day`.

    `history` holds the covered days of the baseline window: a key without a value on one of
    them spent zero that day. `expected` (per key) is the part of the day's value answered
    Expected: it is taken off the value before judging it (the baseline is unchanged).
    """
    found = []
    for key, values in sorted(series.items()):
        baseline = robust_baseline([values.get(d, ZERO) for d in history])
        value = values.get(day, ZERO)
        judged = value - (expected or {}).get(key, ZERO)
        rate = (unit_cost or {}).get(key, Decimal(1))
        excess = (value - baseline.median) * rate
        judged_excess = (judged - baseline.median) * rate
        if (
            baseline.days >= min_history
            and judged > baseline.ceiling
            and judged_excess >= min_excess
        ):
            found.append((key, value, baseline, excess))
    return found


def find_anomalies(
    *,
    session: Session,
    day: dt.date,
    min_excess: Decimal,
    basis: CostBasis = CostBasis.BILLED,
    currency: str = "USD",
    min_history: int = BASELINE_MIN_DAYS,
) -> list[Anomaly]:
    """Find spend anomalies per model and per stage, and GPU-hour anomalies per model, on a day."""
    return scan_anomalies(
        session=session,
        first=day,
        last=day,
        min_excess=min_excess,
        basis=basis,
        currency=currency,
        min_history=min_history,
    ).anomalies


@dataclass
class AnomalyScan:
    """The anomalies of some days, and the scopes that could not be judged for lack of history.

    `short_history` maps each scope (`model:NAME`, `stage:NAME`) that spent on a day with fewer
    covered days of history than required to that history, in days (on the latest such day).
    """

    anomalies: list[Anomaly] = field(default_factory=list)
    short_history: dict[str, int] = field(default_factory=dict)


def scan_anomalies(
    *,
    session: Session,
    first: dt.date,
    last: dt.date,
    min_excess: Decimal,
    basis: CostBasis = CostBasis.BILLED,
    currency: str = "USD",
    min_history: int = BASELINE_MIN_DAYS,
) -> AnomalyScan:
    """Judge each day in [first, last], oldest first, reading the ledger once.

    Each day is judged exactly as `find_anomalies` judges it alone: against its own baseline,
    built from the covered days before it. Only spend billed in `currency` (the organisation's)
    is compared: currencies are never added.
    """
    start = first - dt.timedelta(days=BASELINE_MAX_DAYS)
    covered = covered_days(session, start=start, end=last, currency=currency)
    scan = AnomalyScan()
    if not covered:
        return scan
    cost = cost_column(basis)
    window = [
        DailySpend.day >= start,
        DailySpend.day <= last,
        DailySpend.currency == currency,
        JUDGED_CHARGES,
    ]
    by_model = session.execute(
        select(
            DailySpend.model,
            DailySpend.day,
            func.sum(cost),
            func.sum(DailySpend.gpu_hours),
            func.sum(cost).filter(DailySpend.gpu_hours > 0),
        )
        .where(*window, DailySpend.model.is_not(None))
        .group_by(DailySpend.model, DailySpend.day)
    ).all()
    by_stage = session.execute(
        select(DailySpend.stage, DailySpend.day, func.sum(cost))
        .where(*window)
        .group_by(DailySpend.stage, DailySpend.day)
    ).all()
    accepted_spend, accepted_gpu = load_expectations(session, first, last)
    expected = expected_spend(
        session,
        accepted_spend,
        first=first,
        last=last,
        basis=basis,
        currency=currency,
    )
    spend = _series([(m, d, c) for m, d, c, _, _ in by_model])
    stages = _series(by_stage)
    gpu = _series([(m, d, g) for m, d, _, g, _ in by_model])
    day = first
    while day <= last:
        history = baseline_days(day, covered)
        if len(history) < min_history:
            for prefix, found in (("model", spend), ("stage", stages), ("model", gpu)):
                for name, values in found.items():
                    if values.get(day, ZERO) > 0:
                        scan.short_history[f"{prefix}:{name}"] = len(history)
            day += dt.timedelta(days=1)
            continue
        in_window = [
            r for r in by_model if day - dt.timedelta(days=BASELINE_MAX_DAYS) <= r[1] <= day
        ]
        scan.anomalies.extend(
            _anomalies_on(
                session,
                day,
                history,
                min_excess,
                in_window,
                min_history=min_history,
                spend=spend,
                stages=stages,
                gpu=gpu,
                expected=expected,
                accepted_gpu=accepted_gpu,
            )
        )
        day += dt.timedelta(days=1)
    for anomaly in scan.anomalies:
        if anomaly.kind == "spend":
            anomaly.drivers.extend(
                scope_drivers(
                    session=session,
                    scope=anomaly.scope,
                    day=anomaly.day,
                    history=baseline_days(anomaly.day, covered),
                    basis=basis,
                    currency=currency,
                )
            )
    scan.anomalies = [
        _with_driving_run(
            session, a, history=baseline_days(a.day, covered), cost=cost, currency=currency
        )
        for a in scan.anomalies
    ]
    return scan


def _with_driving_run(
    session: Session, anomaly: Anomaly, *, history: Sequence[dt.date], cost: Any, currency: str
) -> Anomaly:
    """Return the anomaly naming the run that drove it (unchanged when no run rose that day)."""
    kind, _, name = anomaly.scope.partition(":")
    scope = DailySpend.model if kind == "model" else DailySpend.stage
    measure = DailySpend.gpu_hours if anomaly.kind == "gpu" else cost
    run = driving_run(
        session,
        day=anomaly.day,
        history=history,
        measure=measure,
        where=[scope == name, DailySpend.currency == currency, JUDGED_CHARGES],
    )
    return anomaly if run is None else replace(anomaly, run=run)


def driving_run(
    session: Session,
    *,
    day: dt.date,
    history: Sequence[dt.date],
    measure: Any,
    where: Sequence[Any],
) -> RunDriver | None:
    """Return the run whose `measure` rose most on `day` over its own baseline median.

    A run's baseline is the median of its values on the anomaly's covered history days (a
    covered day without the run counts as zero), so a run that starts that day rises by all of
    its spend.
    """
    rows = session.execute(
        select(DailySpend.run, DailySpend.day, func.sum(measure))
        .where(
            *where,
            DailySpend.run.is_not(None),
            DailySpend.day >= (history[0] if history else day),
            DailySpend.day <= day,
        )
        .group_by(DailySpend.run, DailySpend.day)
    ).all()
    best: RunDriver | None = None
    for run, values in sorted(_series(rows).items()):
        value = values.get(day, ZERO)
        increase = value - robust_baseline([values.get(d, ZERO) for d in history]).median
        if increase > 0 and (best is None or increase > best.increase):
            best = RunDriver(run=run, value=value, increase=increase)
    return best


def _on_day(
    expected: Mapping[str, Mapping[dt.date, Decimal]], kind: str, day: dt.date
) -> dict[str, Decimal]:
    """Return the expected spend on a day by name, for the scopes of one kind (model or stage)."""
    prefix = f"{kind}:"
    return {
        scope.removeprefix(prefix): days[day]
        for scope, days in expected.items()
        if scope.startswith(prefix) and day in days
    }


def _with_expected(anomaly: Anomaly, expected: Mapping[str, Mapping[dt.date, Decimal]]) -> Anomaly:
    amount = expected.get(anomaly.scope, {}).get(anomaly.day, ZERO)
    return dataclasses.replace(anomaly, expected=amount) if amount else anomaly


def scope_filter(scope: str) -> Any:
    """Return the ledger condition of an anomaly scope (`model:NAME` or `stage:NAME`)."""
    kind, _, name = scope.partition(":")
    if kind == "model":
        return DailySpend.model == name
    if kind == "stage":
        return DailySpend.stage == name
    raise ValueError(f"not an anomaly scope: {scope}")


def scope_drivers(
    *,
    session: Session,
    scope: str,
    day: dt.date,
    history: Sequence[dt.date],
    basis: CostBasis = CostBasis.BILLED,
    currency: str = "USD",
) -> list[Driver]:
    """Return the dimension values of a scope whose spend rose most on a day (top drivers).

    `history` holds the covered days of the day's baseline window (see `baseline_history`).
    """
    cost = cost_column(basis)
    rows: list[tuple[str, str | None, dt.date, Decimal]] = []
    for dimension in DRIVER_DIMENSIONS:
        column = getattr(DailySpend, dimension)
        found = session.execute(
            select(column, DailySpend.day, func.sum(cost))
            .where(
                scope_filter(scope),
                DailySpend.day >= (history[0] if history else day),
                DailySpend.day <= day,
                DailySpend.currency == currency,
                JUDGED_CHARGES,
            )
            .group_by(column, DailySpend.day)
        ).all()
        rows.extend((dimension, value, d, Decimal(c or 0)) for value, d, c in found)
    return rank_drivers(rows, day=day, history=history)


def _months(first: dt.date, last: dt.date) -> list[str]:
    """Return every month (YYYY-MM) from first's to last's."""
    months, month = [], first.replace(day=1)
    while month <= last:
        months.append(month.strftime("%Y-%m"))
        month = (month + dt.timedelta(days=32)).replace(day=1)
    return months


def load_expectations(
    session: Session, first: dt.date, last: dt.date
) -> tuple[dict[str, list[Expectation]], dict[str, list[Expectation]]]:
    """Return the Expected answers in force on some day of [first, last], read once: the spend
    drivers accepted, by scope, and the GPU-hour levels accepted, by model."""
    rows = session.scalars(
        select(AnomalyExpectation).where(
            AnomalyExpectation.answer == EXPECTED,
            AnomalyExpectation.kind.in_(("spend", "gpu")),
            AnomalyExpectation.month.in_(_months(first, last)),
            AnomalyExpectation.anomaly_day <= last,
            AnomalyExpectation.dimension.is_not(None),
        )
    )
    spend: dict[str, list[Expectation]] = {}
    gpu: dict[str, list[Expectation]] = {}
    for row in rows:
        if row.value is None:
            continue
        if row.kind == "gpu":
            if row.dimension != GPU_HOURS or row.level is None:
                continue
            found, key = gpu, row.value
        elif row.dimension in DRIVER_DIMENSIONS:
            found, key = spend, row.scope
        else:
            continue  # a dimension this version does not read
        found.setdefault(key, []).append(
            Expectation(
                scope=row.scope,
                dimension=row.dimension or GPU_HOURS,
                value=row.value,
                month=row.month,
                since=row.anomaly_day,
                level=row.level or ZERO,
                usual=row.usual or ZERO,
            )
        )
    return spend, gpu


def expected_spend(
    session: Session,
    expectations: Mapping[str, Sequence[Expectation]],
    *,
    first: dt.date,
    last: dt.date,
    basis: CostBasis,
    currency: str,
) -> dict[str, dict[dt.date, Decimal]]:
    """Return, per scope and day of [first, last], the spend its Expected answers accept."""
    cost = cost_column(basis)
    result: dict[str, dict[dt.date, Decimal]] = {}
    for scope, answers in expectations.items():
        spend: dict[dt.date, dict[tuple[str, str], Decimal]] = {}
        for dimension in sorted({a.dimension for a in answers}):
            column = getattr(DailySpend, dimension)
            values = sorted({a.value for a in answers if a.dimension == dimension})
            for value, d, c in session.execute(
                select(column, DailySpend.day, func.sum(cost))
                .where(
                    scope_filter(scope),
                    column.in_(values),
                    DailySpend.day >= first,
                    DailySpend.day <= last,
                    DailySpend.currency == currency,
                    JUDGED_CHARGES,
                )
                .group_by(column, DailySpend.day)
            ):
                spend.setdefault(d, {})[(dimension, value)] = Decimal(c or 0)
        for d, by_driver in spend.items():
            amount = accepted_spend([a for a in answers if a.covers(d)], by_driver)
            if amount > 0:
                result.setdefault(scope, {})[d] = amount
    return result


def _anomalies_on(
    session: Session,
    day: dt.date,
    history: Sequence[dt.date],
    min_excess: Decimal,
    by_model: Sequence[Any],
    *,
    min_history: int,
    spend: Mapping[str, Mapping[dt.date, Decimal]],
    stages: Mapping[str, Mapping[dt.date, Decimal]],
    gpu: Mapping[str, Mapping[dt.date, Decimal]],
    expected: Mapping[str, Mapping[dt.date, Decimal]] | None = None,
    accepted_gpu: Mapping[str, Sequence[Expectation]] | None = None,
) -> list[Anomaly]:
    """Judge one day; `by_model` holds the per-model rows of its baseline window and the day.

    `history` holds the covered days of its baseline window, enough of them to judge the day.

    `expected` holds, per scope (`model:NAME`, `stage:NAME`) and day, the spend answered Expected;
    `accepted_gpu`, per model, the GPU-hour levels answered Expected.
    """
    anomalies: list[Anomaly] = []
    expected = expected or {}
    # a model whose spend jumped explains its GPU-hours, even when the jump was expected
    spiked_models = {
        hit[0]
        for hit in detect(
            spend, day=day, history=history, min_excess=min_excess, min_history=min_history
        )
    }
    for model, value, baseline, excess in detect(
        spend,
        day=day,
        history=history,
        min_excess=min_excess,
        min_history=min_history,
        expected=_on_day(expected, "model", day),
    ):
        anomaly = Anomaly("spend", f"model:{model}", day, value, baseline, excess, model)
        anomalies.append(_with_expected(anomaly, expected))
    for stage, value, baseline, excess in detect(
        stages,
        day=day,
        history=history,
        min_excess=min_excess,
        min_history=min_history,
        expected=_on_day(expected, "stage", day),
    ):
        anomaly = Anomaly("spend", f"stage:{stage}", day, value, baseline, excess)
        anomalies.append(_with_expected(anomaly, expected))
    gpu_cost: dict[str, Decimal] = {}
    gpu_hours: dict[str, Decimal] = {}
    for model, _, _, hours, gpu_spend in by_model:
        gpu_cost[model] = gpu_cost.get(model, ZERO) + Decimal(gpu_spend or 0)
        gpu_hours[model] = gpu_hours.get(model, ZERO) + Decimal(hours or 0)
    unit_cost = {m: gpu_cost[m] / gpu_hours[m] for m in gpu_hours if gpu_hours[m] > 0}
    candidates = [
        hit
        for hit in detect(
            gpu,
            day=day,
            history=history,
            min_excess=min_excess,
            min_history=min_history,
            unit_cost=unit_cost,
        )
        if hit[0] not in spiked_models
    ]
    workload = _workload_growth(session, [c[0] for c in candidates], day, history)
    for model, value, baseline, excess in candidates:
        growth = workload.get(model)
        if (
            growth is not None
            and baseline.median > 0
            and value / baseline.median <= growth * WORKLOAD_SLACK
        ):
            continue  # the model's own workload grew as much: explained
        if any(e.covers(day) and value <= e.level for e in (accepted_gpu or {}).get(model, ())):
            continue  # its owners said this many GPU-hours a day are expected this month
        anomaly = Anomaly("gpu", f"model:{model}", day, value, baseline, excess, model)
        anomaly.resources.extend(_gpu_resource_growth(session, model, day, history))
        anomalies.append(anomaly)
    return anomalies


def _workload_growth(
    session: Session, models: list[str], day: dt.date, history: Sequence[dt.date]
) -> dict[str, Decimal]:
    """Return the value-metric units on `day` relative to their baseline median, per model."""
    if not models:
        return {}
    rows = session.execute(
        select(ValueMetric.model_name, ValueMetric.day, func.sum(ValueMetric.units))
        .where(
            ValueMetric.model_name.in_(models),
            ValueMetric.day >= day - dt.timedelta(days=BASELINE_MAX_DAYS),
            ValueMetric.day <= day,
        )
        .group_by(ValueMetric.model_name, ValueMetric.day)
    ).all()
    growth = {}
    for model, values in _series(rows).items():
        baseline = robust_baseline([values.get(d, ZERO) for d in history])
        if baseline.median > 0 and day in values:
            growth[model] = values[day] / baseline.median
    return growth


def _gpu_resource_growth(
    session: Session, model: str, day: dt.date, history: Sequence[dt.date], limit: int = 3
) -> list[tuple[str, Decimal, bool]]:
    """Return the resources whose GPU-hours grew most on `day`, flagging ones never seen before.

    A resource's usual is its GPU-hours over the covered `history` days, per day.
    """
    if not history:
        return []
    resource = func.coalesce(DailySpend.resource_id, DailySpend.service)
    rows = session.execute(
        select(
            resource,
            func.sum(DailySpend.gpu_hours).filter(DailySpend.day == day),
            func.sum(DailySpend.gpu_hours).filter(DailySpend.day < day),
        )
        .where(
            DailySpend.model == model,
            DailySpend.day >= history[0],
            DailySpend.day <= day,
            DailySpend.gpu_hours > 0,
        )
        .group_by(resource)
    ).all()
    growth = []
    for name, today, before in rows:
        today_value = Decimal(today or 0)
        daily_before = Decimal(before or 0) / len(history)
        if today_value > daily_before:
            growth.append((str(name), today_value - daily_before, before is None))
    growth.sort(key=lambda item: item[1], reverse=True)
    return growth[:limit]
