"""Spend reports from the ledger, aggregated in SQL."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import and_, func, select

from bot.db.reading import Reader
from bot.db.tables import daily_spend
from bot.errors import CurrencyError, UsageError
from bot.ingest.attribution import IDLE
from bot.money import CostBasis
from bot.periods import Period

# The usage account: AWS linked account, Google Cloud project, Azure subscription, OpenCost
# namespace; a charge whose source names none is its billing account's.
USAGE_ACCOUNT = func.coalesce(daily_spend.c.sub_account, daily_spend.c.billing_account)

DIMENSIONS: dict[str, Any] = {
    "model": daily_spend.c.model,
    "stage": daily_spend.c.stage,
    "team": daily_spend.c.team,
    "service": daily_spend.c.service,
    "provider": daily_spend.c.provider,
    "account": USAGE_ACCOUNT,
    "billing_account": daily_spend.c.billing_account,  # the payer / billing account
    "region": daily_spend.c.region,
    "resource": daily_spend.c.resource_id,
    "day": daily_spend.c.day,
    "category": daily_spend.c.charge_category,
    "tag": daily_spend.c.model_tag_value,
}


def taggable() -> Any:
    """Return the condition of spend a tag could claim.

    Idle cluster capacity (OpenCost `__idle__`), tax and a support plan's fee are nobody's by
    nature: the unallocated report and alert leave them out, and `report chargeback` splits them
    (bot/spend/chargeback.py names the same pools).
    """
    return and_(
        daily_spend.c.attribution != IDLE,
        daily_spend.c.charge_category != "Tax",
        func.lower(daily_spend.c.service).not_like("%support%"),
    )


def cost_column(basis: CostBasis, table: Any = daily_spend.c) -> Any:
    """Return the ledger's (or the rollup's) column for a cost basis."""
    if basis not in tuple(CostBasis):  # a plain string from a caller outside the type checker
        raise UsageError(f"cost basis must be billed or effective, not {basis!r}")
    return table.billed_cost if basis == CostBasis.BILLED else table.effective_cost


@dataclass
class SpendLine:
    group: dict[str, Any]
    cost: Decimal
    gpu_hours: Decimal
    currency: str = "USD"
    idle: bool = False  # idle cluster capacity (no model), kept apart from unallocated spend


@dataclass(frozen=True)
class SpendTotals:
    """One currency's totals: attributed + unallocated + idle = the basis total, exactly."""

    currency: str
    billed: Decimal
    effective: Decimal
    total: Decimal
    attributed: Decimal
    unallocated: Decimal
    idle: Decimal = Decimal(0)  # idle cluster capacity (OpenCost `__idle__`)

    def as_json(self) -> dict[str, str]:
        names = ("billed", "effective", "total", "attributed", "unallocated", "idle")
        return {"currency": self.currency, **{name: str(getattr(self, name)) for name in names}}


@dataclass
class SpendReport:
    """Spend per group and currency for a period, with totals per currency that reconcile.

    Amounts in different currencies are never added: every line has one currency, and the
    totals are one per currency. The single-total properties refuse a multi-currency report.
    """

    period: Period
    by: list[str]
    basis: CostBasis
    lines: list[SpendLine] = field(default_factory=list)
    totals: list[SpendTotals] = field(default_factory=list)
    estimated_days: int = 0

    @property
    def currencies(self) -> list[str]:
        """Return the currencies the period's spend was billed in, sorted."""
        return [t.currency for t in self.totals]

    def single(self) -> SpendTotals | None:
        """Return the totals of a one-currency report (None when empty); refuse several."""
        if len(self.totals) > 1:
            raise CurrencyError(
                f"Spend in {self.period.label} is billed in {' and '.join(self.currencies)}; "
                "amounts in different currencies are not added. `mlcost report spend` shows "
                "them side by side."
            )
        return self.totals[0] if self.totals else None

    def _single(self, name: str) -> Decimal:
        totals = self.single()
        return Decimal(0) if totals is None else Decimal(getattr(totals, name))

    @property
    def total(self) -> Decimal:
        """Return the one currency's total on the report's basis."""
        return self._single("total")

    @property
    def billed(self) -> Decimal:
        """Return the one currency's billed total."""
        return self._single("billed")

    @property
    def effective(self) -> Decimal:
        """Return the one currency's effective total."""
        return self._single("effective")

    @property
    def attributed(self) -> Decimal:
        """Return the one currency's attributed total."""
        return self._single("attributed")

    @property
    def unallocated(self) -> Decimal:
        """Return the one currency's unallocated total."""
        return self._single("unallocated")

    @property
    def idle(self) -> Decimal:
        """Return the one currency's idle cluster cost."""
        return self._single("idle")

    @property
    def currency(self) -> str | None:
        """Return the one currency of the report (None when empty); refuse several."""
        totals = self.single()
        return None if totals is None else totals.currency

    def as_json(self) -> dict[str, Any]:
        """Return a machine-readable form: money as exact strings, each with its currency."""
        return {
            "period": {
                "start": self.period.start.isoformat(),
                "end": self.period.end.isoformat(),
                "label": self.period.label,
            },
            "cost_basis": self.basis,
            "by": self.by,
            "rows": [
                {
                    **{
                        k: (v.isoformat() if isinstance(v, dt.date) else v)
                        for k, v in line.group.items()
                    },
                    "currency": line.currency,
                    "cost": str(line.cost),
                    "gpu_hours": str(line.gpu_hours),
                    **({"idle": True} if line.idle else {}),
                }
                for line in self.lines
            ],
            "totals": [t.as_json() for t in self.totals],
            "estimated_days": self.estimated_days,
        }


def parse_dimensions(text: str, *, allow_run: bool = False) -> list[str]:
    """Parse `model,stage` into known dimension names; `run` alone when `allow_run`."""
    names = [part.strip().lower() for part in text.split(",") if part.strip()]
    if allow_run and "run" in names:
        if names != ["run"]:
            raise UsageError(
                "`--by run` lists training runs on its own (model, run, stage, first and last "
                "day are its columns); drop the other dimensions"
            )
        return names
    unknown = [n for n in names if n not in DIMENSIONS]
    if unknown or not names:
        choices = [*DIMENSIONS, "run (alone)"] if allow_run else list(DIMENSIONS)
        raise UsageError(
            f"cannot group by {', '.join(unknown) or 'nothing'}; choose from {', '.join(choices)}"
        )
    return names


def spend_report(
    *,
    session: Reader,
    period: Period,
    by: list[str],
    basis: CostBasis = CostBasis.BILLED,
    where: dict[str, str | None] | None = None,
    only_taggable: bool = False,
) -> SpendReport:
    """Aggregate spend in the period by the dimensions: in date order by day, else largest first.

    `only_taggable=True` leaves out the spend no tag could claim (see `taggable`).
    """
    cost = cost_column(basis)
    in_period = [daily_spend.c.day >= period.start, daily_spend.c.day < period.end]
    if only_taggable:
        in_period.append(taggable())
    for name, value in (where or {}).items():
        in_period.append(
            DIMENSIONS[name] == value if value is not None else DIMENSIONS[name].is_(None)
        )
    columns = [DIMENSIONS[name].label(name) for name in by]
    # grouped by model, idle cluster cost is a line of its own, not part of "(unallocated)"
    idle = (daily_spend.c.attribution == IDLE).label("idle")
    split = [idle] if "model" in by else []
    currency = daily_spend.c.currency.label("currency")
    query = (
        select(
            *columns,
            *split,
            currency,
            func.sum(cost).label("cost"),
            func.sum(daily_spend.c.gpu_hours).label("gpu"),
        )
        .where(*in_period)
        .group_by(*columns, *split, currency)
        # a series by day reads in date order; any other grouping, largest first
        .order_by(currency, *([DIMENSIONS["day"]] if "day" in by else []), func.sum(cost).desc())
    )
    report = SpendReport(period=period, by=by, basis=basis)
    for row in session.execute(query):
        group = {name: row._mapping[name] for name in by}
        report.lines.append(
            SpendLine(
                group,
                Decimal(row.cost or 0),
                Decimal(row.gpu or 0),
                row.currency,
                idle=bool(split and row.idle and row._mapping["model"] is None),
            )
        )
    report.totals = _totals(session, in_period, basis)
    report.estimated_days = estimated_days(session, in_period)
    return report


def estimated_days(session: Reader, in_period: Sequence[Any]) -> int:
    """Count the days in the conditions whose spend includes provider estimates."""
    query = select(func.count(func.distinct(daily_spend.c.day))).where(
        *in_period, daily_spend.c.estimated.is_(True)
    )
    return int(session.scalar(query) or 0)


def _totals(session: Reader, in_period: list[Any], basis: CostBasis) -> list[SpendTotals]:
    """Return the period's totals per currency: billed, effective, attributed, unallocated, idle."""
    cost = cost_column(basis)
    no_model = daily_spend.c.model.is_(None)
    idle = and_(no_model, daily_spend.c.attribution == IDLE)
    currency = daily_spend.c.currency.label("currency")
    totals = []
    for row in session.execute(
        select(
            currency,
            func.sum(daily_spend.c.billed_cost),
            func.sum(daily_spend.c.effective_cost),
            func.sum(cost).filter(daily_spend.c.model.is_not(None)),
            func.sum(cost).filter(no_model, daily_spend.c.attribution != IDLE),
            func.sum(cost).filter(idle),
        )
        .where(*in_period)
        .group_by(currency)
        .order_by(currency)
    ):
        billed, effective = Decimal(row[1] or 0), Decimal(row[2] or 0)
        totals.append(
            SpendTotals(
                currency=row.currency,
                billed=billed,
                effective=effective,
                total=billed if basis == CostBasis.BILLED else effective,
                attributed=Decimal(row[3] or 0),
                unallocated=Decimal(row[4] or 0),
                idle=Decimal(row[5] or 0),
            )
        )
    return totals


def ledger_currencies(
    session: Reader, *, period: Period | None = None, where: Sequence[Any] = ()
) -> list[str]:
    """Return the currencies the ledger's spend (in a period, matching conditions) is billed in."""
    conditions = list(where)
    if period is None and not conditions:
        return _all_currencies(session)
    if period is not None:
        conditions += [daily_spend.c.day >= period.start, daily_spend.c.day < period.end]
    query = select(daily_spend.c.currency).where(*conditions).distinct()
    return sorted(session.scalars(query))


def _all_currencies(session: Reader) -> list[str]:
    """Return every currency of the ledger, each found from the one before it as the least
    greater one: one probe of the index led by currency per currency (a DISTINCT would read
    every row of the ledger)."""
    found = select(func.min(daily_spend.c.currency).label("code")).cte("currencies", recursive=True)
    following = (
        select(func.min(daily_spend.c.currency)).where(daily_spend.c.currency > found.c.code)
    ).scalar_subquery()
    found = found.union_all(select(following).where(found.c.code.is_not(None)))
    return sorted(session.scalars(select(found.c.code).where(found.c.code.is_not(None))))


def check_currency_setting(session: Reader, setting: str) -> None:
    """Refuse an organisation currency (MLCOST_CURRENCY) in which the ledger holds no spend.

    mlcost never converts or relabels money: a setting of EUR over a ledger billed in USD would
    show dollars as euros, and compare them with euro budgets.
    """
    found = ledger_currencies(session)
    if found and setting not in found:
        only = " only" if len(found) == 1 else ""
        raise CurrencyError(
            f"MLCOST_CURRENCY is {setting}, but the ledger holds spend billed in "
            f"{' and '.join(found)}{only}; mlcost does not convert or relabel amounts. Set "
            f"MLCOST_CURRENCY to the organisation's billing currency ({found[0]}"
            f"{' or ' + ' or '.join(found[1:]) if len(found) > 1 else ''}), or ingest the "
            f"{setting} billing."
        )


def display_currency(
    session: Reader, *, setting: str, period: Period, where: Sequence[Any] = (), what: str
) -> str:
    """Return the one currency a single-currency view shows: that of its spend, else the setting.

    Refuses spend billed in several currencies (they are never added) and a setting the ledger
    contradicts. `what` names the spend for the message, e.g. "`recsys`'s spend".
    """
    check_currency_setting(session, setting)
    found = ledger_currencies(session, period=period, where=where)
    if len(found) > 1:
        raise CurrencyError(
            f"{what} in {period.label} is billed in {' and '.join(found)}; amounts in different "
            "currencies are never added. `mlcost report spend --by model` shows each currency "
            "on its own."
        )
    return found[0] if found else setting
