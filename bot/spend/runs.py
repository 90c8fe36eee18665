"""Cost per training run, read from the ledger: a model's most expensive runs, the run report."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select

from bot.db.reading import Reader
from bot.db.tables import daily_spend
from bot.money import CostBasis
from bot.periods import Period
from bot.spend.reports import SpendLine, SpendReport, _totals, cost_column, estimated_days

# The columns of `mlcost report spend --by run`, before currency, cost and GPU-hours.
RUN_COLUMNS = ["model", "run", "stage", "first_day", "last_day"]
TOP_RUNS = 5
ZERO = Decimal(0)


@dataclass(frozen=True)
class RunCost:
    """One training run's spend over a window: its stages, first and last day, cost, GPU-hours."""

    model: str | None
    run: str
    stages: tuple[str, ...]  # most expensive first
    first_day: dt.date
    last_day: dt.date
    cost: Decimal
    gpu_hours: Decimal
    currency: str

    @property
    def stage(self) -> str:
        """Return the run's stage, or its stages joined with `+` when it spans several."""
        return "+".join(self.stages)


def run_costs(
    *,
    session: Reader,
    start: dt.date,
    end: dt.date,
    basis: CostBasis = CostBasis.BILLED,
    where: Sequence[Any] = (),
) -> list[RunCost]:
    """Return every run's spend in [start, end), per currency, most expensive first."""
    cost = cost_column(basis)
    rows = session.execute(
        select(
            daily_spend.c.currency,
            daily_spend.c.model,
            daily_spend.c.run,
            daily_spend.c.stage,
            func.min(daily_spend.c.day),
            func.max(daily_spend.c.day),
            func.sum(cost),
            func.sum(daily_spend.c.gpu_hours),
        )
        .where(
            daily_spend.c.day >= start,
            daily_spend.c.day < end,
            daily_spend.c.run.is_not(None),
            *where,
        )
        .group_by(
            daily_spend.c.currency, daily_spend.c.model, daily_spend.c.run, daily_spend.c.stage
        )
    ).all()
    # one run may span stages (training, then its checkpoints' storage): fold them into one line
    parts: dict[tuple[str, str | None, str], list[tuple[str, dt.date, dt.date, Decimal, Decimal]]]
    parts = {}
    for currency, model, run, stage, first, last, total, gpu in rows:
        parts.setdefault((currency, model, run), []).append(
            (stage, first, last, Decimal(total or 0), Decimal(gpu or 0))
        )
    runs = []
    for (currency, model, run), stages in parts.items():
        stages.sort(key=lambda s: (-s[3], s[0]))
        runs.append(
            RunCost(
                model=model,
                run=run,
                stages=tuple(s[0] for s in stages),
                first_day=min(s[1] for s in stages),
                last_day=max(s[2] for s in stages),
                cost=sum((s[3] for s in stages), ZERO),
                gpu_hours=sum((s[4] for s in stages), ZERO),
                currency=currency,
            )
        )
    runs.sort(key=lambda r: (r.currency, -r.cost, r.model or "", r.run))
    return runs


def model_top_runs(
    *,
    session: Reader,
    model: str,
    start: dt.date,
    end: dt.date,
    basis: CostBasis = CostBasis.BILLED,
    limit: int = TOP_RUNS,
) -> list[RunCost]:
    """Return a model's most expensive runs in [start, end)."""
    found = run_costs(
        session=session, start=start, end=end, basis=basis, where=[daily_spend.c.model == model]
    )
    return sorted(found, key=lambda r: -r.cost)[:limit]


def run_report(
    *,
    session: Reader,
    period: Period,
    basis: CostBasis = CostBasis.BILLED,
    model: str | None = None,
) -> SpendReport:
    """Report the period's runs, most expensive first, then one `(no run)` line per currency.

    The lines add up to the totals to the cent: spend without a run is a line of its own, never
    dropped. `model` limits the runs, the `(no run)` line and the totals to one model's spend.
    """
    where = [] if model is None else [daily_spend.c.model == model]
    in_period = [daily_spend.c.day >= period.start, daily_spend.c.day < period.end, *where]
    report = SpendReport(period=period, by=list(RUN_COLUMNS), basis=basis)
    lines_by_currency: dict[str, list[SpendLine]] = {}
    for run in run_costs(
        session=session, start=period.start, end=period.end, basis=basis, where=where
    ):
        group = {
            "model": run.model,
            "run": run.run,
            "stage": run.stage,
            "first_day": run.first_day,
            "last_day": run.last_day,
        }
        lines_by_currency.setdefault(run.currency, []).append(
            SpendLine(group, run.cost, run.gpu_hours, run.currency)
        )
    cost = cost_column(basis)
    for currency, first, last, total, gpu in session.execute(
        select(
            daily_spend.c.currency,
            func.min(daily_spend.c.day),
            func.max(daily_spend.c.day),
            func.sum(cost),
            func.sum(daily_spend.c.gpu_hours),
        )
        .where(*in_period, daily_spend.c.run.is_(None))
        .group_by(daily_spend.c.currency)
    ):
        group = {"model": model, "run": None, "stage": None, "first_day": first, "last_day": last}
        lines_by_currency.setdefault(currency, []).append(
            SpendLine(group, Decimal(total or 0), Decimal(gpu or 0), currency)
        )
    for currency in sorted(lines_by_currency):
        report.lines.extend(lines_by_currency[currency])
    report.totals = _totals(session, in_period, basis)
    report.estimated_days = estimated_days(session, in_period)
    return report
