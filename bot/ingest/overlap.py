"""The same dollars from two sources: which source counts them, and what is set aside.

One rule: **the bill counts**. When two source kinds hold the same provider account's day (a
CUR and a FOCUS export of one AWS account, Cost Explorer and the CUR, OpenCost's `/cloudCost`
and the bill it read), the rows of the kind earlier in SOURCE_PRIORITY stay in `daily_spend`
and the others move to `overlapping_spend`, which no report, budget or chargeback sums. The
choice depends on the kinds alone, not on which was ingested first, so the ledger ends the same
whatever the order; a set-aside day comes back when the source that counted it no longer does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import delete, func, insert, literal, select

from bot.db.reading import Writer
from bot.db.tables import daily_spend, ingestion_runs, overlapping_spend
from bot.money import format_money_places

# The book of record first: the detailed bill, the bill through Athena, FOCUS, then the
# summaries (Cost Explorer) and OpenCost's restatement of the bill (`/cloudCost`).
SOURCE_PRIORITY = ("cur", "athena", "focus", "cost-explorer", "opencost")
# Kubernetes allocations are not a provider's bill: they never overlap by account and day.
KUBERNETES = "Kubernetes"
_PROVIDERS = {
    "aws": "AWS",
    "amazon": "AWS",
    "amazon web services": "AWS",
    "azure": "Azure",
    "microsoft": "Azure",
    "microsoft azure": "Azure",
    "gcp": "Google Cloud",
    "google": "Google Cloud",
    "google cloud": "Google Cloud",
    "google cloud platform": "Google Cloud",
    "oci": "OCI",
    "oracle": "OCI",
    "oracle cloud infrastructure": "OCI",
}


def canonical_provider(name: str) -> str:
    """Return the provider a name stands for: `Amazon Web Services` and `AWS` are one."""
    return _PROVIDERS.get(name.strip().lower(), name.strip())


def _priority(kind: str) -> int:
    return SOURCE_PRIORITY.index(kind) if kind in SOURCE_PRIORITY else len(SOURCE_PRIORITY)


def _placeholder(account: str, provider: str) -> bool:
    """Whether an account stands for the provider's whole bill (Cost Explorer's `aws`)."""
    folded = account.strip().lower()
    return folded in ("", provider.lower(), canonical_provider(provider).lower())


@dataclass(frozen=True)
class Overlap:
    """Dollars of one ingestion also in the ledger from another source kind, counted once."""

    counted_by: str  # the kind whose rows count
    set_aside: str  # the kind whose rows were set aside
    provider: str
    account: str
    first_day: dt.date
    last_day: dt.date
    currency: str
    amount: Decimal  # billed, set aside

    def describe(self, kind: str) -> str:
        """Say it for the reconciliation line of an ingestion of `kind`."""
        days = (
            f"{self.first_day}"
            if self.first_day == self.last_day
            else f"{self.first_day}..{self.last_day}"
        )
        where = f"same {self.provider} account {self.account} on {days}"
        if kind == self.set_aside:
            return (
                f"{_cents(self.amount, self.currency)} also billed by {self.counted_by} "
                f"({where}), counted once"
            )
        return (
            f"{_cents(self.amount, self.currency)} also ingested from {self.set_aside} ({where}), "
            "counted once"
        )

    def as_dict(self) -> dict[str, str]:
        return {
            "counted_by": self.counted_by,
            "set_aside": self.set_aside,
            "provider": self.provider,
            "account": self.account,
            "first_day": self.first_day.isoformat(),
            "last_day": self.last_day.isoformat(),
            "currency": self.currency,
            "amount": str(self.amount),
        }


@dataclass(frozen=True)
class _Part:
    """The ledger's rows of one (provider, account, day, source kind, currency)."""

    provider: str
    account: str
    day: dt.date
    kind: str
    currency: str
    billed: Decimal
    aside: bool
    mine: bool  # the rows the ingestion being resolved wrote


def _same_account(one: _Part, other: _Part) -> bool:
    """Whether two parts of one provider's day bill the same account (a placeholder: any)."""
    return (
        one.account == other.account
        or _placeholder(one.account, one.provider)
        or _placeholder(other.account, other.provider)
    )


def _ledger_columns() -> list[str]:
    """The columns daily_spend and overlapping_spend share (all but the id)."""
    theirs = {c.name for c in overlapping_spend.columns}
    return [c.name for c in daily_spend.columns if c.name != "id" and c.name in theirs]


def _parts(session: Writer, first: dt.date, last: dt.date, run_id: int) -> list[_Part]:
    """Return what the ledger holds per provider, account, day, kind and currency, the rows of
    the ingestion `run_id` apart."""
    found: dict[tuple[Any, ...], Decimal] = {}
    for table, aside in ((daily_spend, False), (overlapping_spend, True)):
        model, runs = table.c, ingestion_runs.c
        rows = session.execute(
            select(
                model.provider,
                model.billing_account,
                model.day,
                runs.source,
                model.currency,
                model.run_id,
                func.sum(model.billed_cost),
            )
            .select_from(table.join(ingestion_runs, runs.id == model.run_id))
            .where(model.day >= first, model.day <= last, model.provider != KUBERNETES)
            .group_by(
                model.provider,
                model.billing_account,
                model.day,
                runs.source,
                model.currency,
                model.run_id,
            )
        )
        for provider, account, day, kind, currency, run, billed in rows:
            key = (provider, account, day, kind, currency, aside, run == run_id)
            found[key] = found.get(key, Decimal(0)) + Decimal(billed or 0)
    return [
        _Part(provider, account, day, kind, currency, billed, aside, mine)
        for (provider, account, day, kind, currency, aside, mine), billed in found.items()
    ]


def _counting_kind(part: _Part, parts: Iterable[_Part]) -> str | None:
    """Return the kind that counts this part's dollars instead of it, or None if it counts."""
    provider = canonical_provider(part.provider)
    best: str | None = None
    for other in parts:
        if other.kind == part.kind or canonical_provider(other.provider) != provider:
            continue
        if not _same_account(other, part) or _priority(other.kind) >= _priority(part.kind):
            continue
        if best is None or _priority(other.kind) < _priority(best):
            best = other.kind
    return best


def resolve_overlaps(
    session: Writer, first: dt.date, last: dt.date, *, kind: str, run_id: int
) -> list[Overlap]:
    """Set aside the days first..last that a source earlier in SOURCE_PRIORITY also holds.

    Rows set aside earlier whose day no earlier source holds any more come back. Return the
    overlaps of the ingestion `run_id` (of `kind`): its own rows set aside, or another kind's
    rows set aside because its rows bill the same account's day; one per counted/set-aside
    pair, account and currency. Other rows of the same kind on those days (another account's
    export, OpenCost's /cloudCost beside its allocations) are not its overlaps.
    """
    parts = _parts(session, first, last, run_id)
    by_day: dict[tuple[str, dt.date], list[_Part]] = {}
    for part in parts:
        by_day.setdefault((canonical_provider(part.provider), part.day), []).append(part)
    moves: dict[tuple[str, str, dt.date, str], tuple[bool, str]] = {}
    overlaps: dict[tuple[str, str, str, str, str], list[Any]] = {}
    for part in parts:
        same_day = by_day[(canonical_provider(part.provider), part.day)]
        counted_by = _counting_kind(part, same_day)
        key = (part.provider, part.account, part.day, part.kind)
        if counted_by is None and part.aside:
            moves[key] = (False, "")
        elif counted_by is not None and not part.aside:
            moves[key] = (True, counted_by)
        if counted_by is not None and _involves(part, counted_by, kind, same_day):
            group = (counted_by, part.kind, part.account, part.currency, part.provider)
            entry = overlaps.setdefault(group, [part.day, part.day, Decimal(0)])
            entry[0], entry[1] = min(entry[0], part.day), max(entry[1], part.day)
            entry[2] += part.billed
    for (provider, account, day, part_kind), (aside, counted_by) in sorted(moves.items()):
        _move(session, provider, account, day, part_kind, aside=aside, counted_by=counted_by)
    return [
        Overlap(
            counted_by=counted_by,
            set_aside=set_aside,
            provider=canonical_provider(provider),
            account=account,
            first_day=first_day,
            last_day=last_day,
            currency=currency,
            amount=amount,
        )
        for (counted_by, set_aside, account, currency, provider), (
            first_day,
            last_day,
            amount,
        ) in sorted(overlaps.items())
    ]


def _involves(part: _Part, counted_by: str, kind: str, same_day: Iterable[_Part]) -> bool:
    """Whether a part set aside is the ingestion's overlap: its own rows, or rows its own rows
    count instead."""
    if part.kind == kind:
        return part.mine
    return counted_by == kind and any(
        other.mine and other.kind == kind and _same_account(other, part) for other in same_day
    )


def _move(
    session: Writer,
    provider: str,
    account: str,
    day: dt.date,
    kind: str,
    *,
    aside: bool,
    counted_by: str,
) -> None:
    """Move one source kind's rows of a provider account's day to or from overlapping_spend."""
    ledger, set_aside = daily_spend, overlapping_spend
    source, target = (ledger, set_aside) if aside else (set_aside, ledger)
    runs = select(ingestion_runs.c.id).where(ingestion_runs.c.source == kind)
    where = (
        source.c.provider == provider,
        source.c.billing_account == account,
        source.c.day == day,
        source.c.run_id.in_(runs),
    )
    columns = _ledger_columns()
    chosen = [source.c[name] for name in columns]
    if aside:
        rows = select(*chosen, literal(counted_by).label("counted_by")).where(*where)
        session.execute(insert(target).from_select([*columns, "counted_by"], rows))
    else:
        session.execute(insert(target).from_select(columns, select(*chosen).where(*where)))
    session.execute(delete(source).where(*where))


def _cents(amount: Decimal, currency: str) -> str:
    """Render an amount to the cent as the ingestion's reconciliation line does."""
    return format_money_places(amount, currency, 2)
