"""Spend reports from the ledger, aggregated in SQL."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.errors import UsageError
from bot.models import DailySpend
from bot.periods import Period

DIMENSIONS: dict[str, Any] = {
    "model": DailySpend.model,
    "stage": DailySpend.stage,
    "team": DailySpend.team,
    "service": DailySpend.service,
    "provider": DailySpend.provider,
    "account": DailySpend.billing_account,
    "region": DailySpend.region,
    "resource": DailySpend.resource_id,
    "day": DailySpend.day,
    "category": DailySpend.charge_category,
    "tag": DailySpend.model_tag_value,
}
BASES = ("billed", "effective")


def cost_column(basis: str, table: Any = DailySpend) -> Any:
    """Return the ledger's (or the rollup's) column for a cost basis."""
    if basis not in BASES:
        raise UsageError(f"cost basis must be billed or effective, not {basis!r}")
    return table.billed_cost if basis == "billed" else table.effective_cost


@dataclass
class SpendLine:
    group: dict[str, Any]
    cost: Decimal
    gpu_hours: Decimal


@dataclass
class SpendReport:
    """Spend per group for a period, with totals that reconcile."""

    period: Period
    by: list[str]
    basis: str
    lines: list[SpendLine] = field(default_factory=list)
    total: Decimal = Decimal(0)
    attributed: Decimal = Decimal(0)
    unallocated: Decimal = Decimal(0)
    billed: Decimal = Decimal(0)
    effective: Decimal = Decimal(0)
    estimated_days: int = 0

    def as_json(self) -> dict[str, Any]:
        """Return a machine-readable form; money as strings to stay exact."""
        return {
            "period": {"start": self.period.start.isoformat(), "end": self.period.end.isoformat(),
                       "label": self.period.label},
            "cost_basis": self.basis,
            "by": self.by,
            "rows": [
                {**{k: (v.isoformat() if isinstance(v, dt.date) else v)
                    for k, v in line.group.items()},
                 "cost": str(line.cost), "gpu_hours": str(line.gpu_hours)}
                for line in self.lines
            ],
            "totals": {"billed": str(self.billed), "effective": str(self.effective),
                       "total": str(self.total), "attributed": str(self.attributed),
                       "unallocated": str(self.unallocated)},
            "estimated_days": self.estimated_days,
        }  # fmt: skip


def parse_dimensions(text: str) -> list[str]:
    """Parse `model,stage` into known dimension names."""
    names = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in DIMENSIONS]
    if unknown or not names:
        raise UsageError(
            f"cannot group by {', '.join(unknown) or 'nothing'}; choose from "
            f"{', '.join(DIMENSIONS)}"
        )
    return names


def spend_report(
    *, session: Session, period: Period, by: list[str], basis: str = "billed",
    where: dict[str, str | None] | None = None,
) -> SpendReport:  # fmt: skip
    """Aggregate spend in the period by the given dimensions, largest first."""
    cost = cost_column(basis)
    in_period = [DailySpend.day >= period.start, DailySpend.day < period.end]
    for name, value in (where or {}).items():
        in_period.append(
            DIMENSIONS[name] == value if value is not None else DIMENSIONS[name].is_(None)
        )
    columns = [DIMENSIONS[name].label(name) for name in by]
    query = (
        select(*columns, func.sum(cost).label("cost"),
               func.sum(DailySpend.gpu_hours).label("gpu"))
        .where(*in_period).group_by(*columns).order_by(func.sum(cost).desc())
    )  # fmt: skip
    report = SpendReport(period=period, by=by, basis=basis)
    for row in session.execute(query):
        group = {name: row._mapping[name] for name in by}
        report.lines.append(SpendLine(group, Decimal(row.cost or 0), Decimal(row.gpu or 0)))
    totals = session.execute(
        select(
            func.sum(DailySpend.billed_cost), func.sum(DailySpend.effective_cost),
            func.sum(cost).filter(DailySpend.model.is_not(None)),
            func.sum(cost).filter(DailySpend.model.is_(None)),
            func.count(func.distinct(DailySpend.day)).filter(DailySpend.estimated.is_(True)),
        ).where(*in_period)
    ).one()  # fmt: skip
    report.billed = Decimal(totals[0] or 0)
    report.effective = Decimal(totals[1] or 0)
    report.attributed = Decimal(totals[2] or 0)
    report.unallocated = Decimal(totals[3] or 0)
    report.total = report.billed if basis == "billed" else report.effective
    report.estimated_days = int(totals[4] or 0)
    return report
