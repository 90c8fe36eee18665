"""Chargeback: each team's month, its own spend plus its split of the shared costs, to the cent.

Shared costs are the ledger's spend that no team owns, in four pools: `tax` (charge category
Tax), `support` (a support plan's service), `idle` (idle Kubernetes cluster capacity, which the
OpenCost ingestion keeps as its own line) and `unallocated` (everything else without a team).
The registry's `chargeback:` section says how each pool is split: `evenly` among the teams that
spent that month, `proportional` to their own spend, or by `fixed` shares.

Splitting is exact (Decimal); only the last step rounds to cents, by the largest-remainder
method, first the pools' totals to the month's billed total and then each pool's cells to that
pool's total. So every row adds up, every column adds up, and the grand total is the ledger's
total rounded to the cent: nothing is lost or invented by rounding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, Protocol

from sqlalchemy import func, select

from bot.db.reading import Reader
from bot.db.tables import daily_spend, registry_settings, teams
from bot.errors import UsageError
from bot.ingest.attribution import IDLE
from bot.money import CENT, ZERO, CostBasis, largest_remainder
from bot.periods import Period
from bot.spend.reports import USAGE_ACCOUNT, cost_column

POOLS = ("unallocated", "idle", "support", "tax")
COLUMNS = ("direct", *POOLS)
DETAILS = ("account",)  # what `--detail` may break each team's row down by
IDLE_ATTRIBUTION = IDLE  # OpenCost's idle cluster capacity (bot/ingest/sources/opencost.py)


class SplitPolicy(Protocol):
    """How shared pools are split: the registry's `chargeback:` section (its spec when a
    registry file is read, `ChargebackPolicy` as the database stores it)."""

    @property
    def shares(self) -> Mapping[str, Decimal]: ...

    def method(self, pool: str) -> str: ...


@dataclass(frozen=True)
class ChargebackPolicy:
    """The registry's `chargeback:` section as the import stored it (validated there by
    bot.registry.spec.ChargebackSpec), read without the registry's models: the report then
    loads no pydantic (about 0.08 s of a command that answers in under 0.5 s)."""

    split: str = "proportional"
    pools: dict[str, str] = field(default_factory=dict)
    shares: dict[str, Decimal] = field(default_factory=dict)

    @classmethod
    def from_stored(cls, stored: Mapping[str, Any]) -> ChargebackPolicy:
        """Return the policy from its stored JSON (shares as exact strings)."""
        return cls(
            split=str(stored.get("split") or "proportional"),
            pools={str(k): str(v) for k, v in (stored.get("pools") or {}).items()},
            shares={str(k): Decimal(str(v)) for k, v in (stored.get("shares") or {}).items()},
        )

    def method(self, pool: str) -> str:
        """Return the split method of one shared pool."""
        return self.pools.get(pool, self.split)


def load_chargeback_policy(*, session: Reader) -> ChargebackPolicy:
    """Return how the registry splits shared costs (proportionally when it says nothing)."""
    setting = session.execute(
        select(registry_settings.c.value).where(registry_settings.c.key == "chargeback")
    ).first()
    return ChargebackPolicy.from_stored(setting.value if setting else {})


def shared_pool(*, charge_category: str | None, service: str | None, attribution: str) -> str:
    """Name the shared pool a charge without a team belongs to."""
    if (charge_category or "").lower() == "tax":
        return "tax"
    if "support" in (service or "").lower():
        return "support"
    if attribution == IDLE_ATTRIBUTION:
        return "idle"
    return "unallocated"


@dataclass(frozen=True)
class TeamCharge:
    """One team's month in cents: its own spend, its split of each pool, and the sum."""

    team: str
    cells: Mapping[str, Decimal]

    @property
    def direct(self) -> Decimal:
        return self.cells["direct"]

    @property
    def shared(self) -> Decimal:
        return sum((self.cells[pool] for pool in POOLS), ZERO)

    @property
    def total(self) -> Decimal:
        return self.direct + self.shared


@dataclass(frozen=True)
class AccountCharge(TeamCharge):
    """A team's month in one usage account: its spend there and its split of the pools there."""

    account: str = ""


@dataclass
class Chargeback:
    """One currency's chargeback for a month; `total` equals the ledger's total to the cent."""

    period: Period
    currency: str
    basis: CostBasis
    methods: dict[str, str]
    teams: list[TeamCharge]
    exact_total: Decimal  # the ledger's total, unrounded
    notes: list[str] = field(default_factory=list)
    # with `detail="account"`: each team's row by usage account, adding up to it to the cent
    accounts: list[AccountCharge] = field(default_factory=list)
    # each team's cells before rounding (what the account detail splits)
    exact_cells: dict[str, dict[str, Decimal]] = field(default_factory=dict, repr=False)

    def column_total(self, column: str) -> Decimal:
        return sum((t.cells[column] for t in self.teams), ZERO)

    @property
    def total(self) -> Decimal:
        return sum((t.total for t in self.teams), ZERO)

    @property
    def ledger_total(self) -> Decimal:
        """The ledger's total rounded to the cent, which `total` must equal."""
        return self.exact_total.quantize(CENT, rounding=ROUND_HALF_EVEN)

    def as_json(self) -> dict[str, Any]:
        """Money as exact strings with its currency; no markup."""
        return {
            "month": self.period.label,
            "currency": self.currency,
            "cost_basis": str(self.basis),
            "split": {pool: self.methods[pool] for pool in POOLS},
            "teams": [
                {
                    "team": t.team,
                    **{column: str(t.cells[column]) for column in COLUMNS},
                    "shared": str(t.shared),
                    "total": str(t.total),
                }
                for t in self.teams
            ],
            "totals": {
                **{column: str(self.column_total(column)) for column in COLUMNS},
                "total": str(self.total),
            },
            "reconciliation": {
                "ledger_total": str(self.ledger_total),
                "charged_total": str(self.total),
                "difference": str(self.total - self.ledger_total),
            },
            "notes": list(self.notes),
            **(
                {
                    "accounts": [
                        {
                            "team": a.team,
                            "account": a.account,
                            **{column: str(a.cells[column]) for column in COLUMNS},
                            "shared": str(a.shared),
                            "total": str(a.total),
                        }
                        for a in self.accounts
                    ]
                }
                if self.accounts
                else {}
            ),
        }


# --- the ledger -------------------------------------------------------------------------


@dataclass
class _MonthSpend:
    direct: dict[str, Decimal] = field(default_factory=dict)
    pools: dict[str, Decimal] = field(default_factory=lambda: dict.fromkeys(POOLS, ZERO))
    # per usage account: each team's direct spend and each pool (a team or a pool -> account)
    by_account: dict[str, dict[str, Decimal]] = field(default_factory=dict)

    def add(self, owner: str, account: str, value: Decimal) -> None:
        cells = self.by_account.setdefault(owner, {})
        cells[account] = cells.get(account, ZERO) + value


def chargeback_report(
    *,
    session: Reader,
    period: Period,
    policy: SplitPolicy,
    basis: CostBasis = CostBasis.BILLED,
    detail: str | None = None,
) -> list[Chargeback]:
    """Return the month's chargeback, one per currency the month was billed in (never added).

    `detail="account"` also breaks each team's row down by usage account.
    """
    if detail is not None and detail not in DETAILS:
        raise UsageError(f"cannot detail a chargeback by {detail!r}; choose {', '.join(DETAILS)}")
    cost = cost_column(basis)
    groups = [
        daily_spend.c.currency,
        daily_spend.c.team,
        daily_spend.c.charge_category,
        daily_spend.c.service,
        daily_spend.c.attribution,
        USAGE_ACCOUNT.label("account") if detail else None,
    ]
    keys = [g for g in groups if g is not None]
    rows = session.execute(
        select(*keys, func.sum(cost))
        .where(daily_spend.c.day >= period.start, daily_spend.c.day < period.end)
        .group_by(*keys)
    )
    spend: dict[str, _MonthSpend] = {}
    for row in rows:
        currency = str(row[0])
        team: str | None = row[1]
        category, service, attribution = row[2], row[3], str(row[4])
        month = spend.setdefault(currency, _MonthSpend())
        value = Decimal(row[-1] or 0)
        if team is not None:
            month.direct[team] = month.direct.get(team, ZERO) + value
            owner = team
        else:
            pool = shared_pool(charge_category=category, service=service, attribution=attribution)
            month.pools[pool] += value
            owner = f"pool:{pool}"
        if detail:
            month.add(owner, row.account, value)
    registry_teams = sorted(session.scalars(select(teams.c.name)))
    charges = []
    for currency, month in sorted(spend.items()):
        charge = allocate(
            period=period,
            currency=currency,
            basis=basis,
            direct=month.direct,
            pools=month.pools,
            policy=policy,
            registry_teams=registry_teams,
        )
        if detail:
            charge.accounts = account_detail(charge, month.pools, month.by_account)
        charges.append(charge)
    return charges


def account_detail(
    charge: Chargeback,
    pools: Mapping[str, Decimal],
    by_account: Mapping[str, Mapping[str, Decimal]],
) -> list[AccountCharge]:
    """Split each team's cells by usage account; rows add up to the team's cells to the cent.

    A team's direct spend is split as it was spent; its share of a pool as the pool was spent
    (a team holding a quarter of the pool holds a quarter of each account's part of it). Each
    cell is rounded to its team's rounded cell by the largest remainder, like the matrix.
    """
    cents = {team.team: team.cells for team in charge.teams}
    rows: dict[tuple[str, str], dict[str, Decimal]] = {}
    for team, exact in charge.exact_cells.items():
        for column in COLUMNS:
            if column == "direct":
                parts = dict(by_account.get(team, {}))
            else:
                spent = by_account.get(f"pool:{column}", {})
                parts = split_signed(exact[column], spent, pools.get(column, ZERO))
            if not parts:
                continue
            for account, value in largest_remainder(parts, cents[team][column]).items():
                cells = rows.setdefault((team, account), dict.fromkeys(COLUMNS, ZERO))
                cells[column] = value
    return [
        AccountCharge(team=team, cells=cells, account=account)
        for (team, account), cells in sorted(rows.items())
        if any(cells.values())
    ]


def split_signed(
    amount: Decimal, parts: Mapping[str, Decimal], whole: Decimal
) -> dict[str, Decimal]:
    """Split an amount as `whole` is made of `parts` (any signs); the last part takes the rest."""
    if amount == 0 or whole == 0 or not parts:
        return {}
    names = sorted(parts)
    shares = {name: amount * parts[name] / whole for name in names[:-1]}
    shares[names[-1]] = amount - sum(shares.values(), ZERO)
    return shares


# --- the split (pure) -------------------------------------------------------------------


def allocate(
    *,
    period: Period,
    currency: str,
    basis: CostBasis,
    direct: Mapping[str, Decimal],
    pools: Mapping[str, Decimal],
    policy: SplitPolicy,
    registry_teams: Sequence[str] = (),
) -> Chargeback:
    """Split each shared pool among teams by the policy, then round to cents losing nothing."""
    notes: list[str] = []
    spenders = sorted(team for team, amount in direct.items() if amount != 0)
    teams = sorted({*direct, *registry_teams, *policy.shares})
    if not teams and any(pools.values()):
        raise UsageError(
            "no team to charge: the registry declares no teams and no spend is attributed to one"
        )
    exact: dict[str, dict[str, Decimal]] = {
        team: {column: ZERO for column in COLUMNS} for team in teams
    }
    for team, amount in direct.items():
        exact[team]["direct"] = amount
    methods = {pool: policy.method(pool) for pool in POOLS}
    for pool in POOLS:
        amount = pools.get(pool, ZERO)
        weights = _weights(methods[pool], spenders or teams, direct, policy, notes, pool, amount)
        for team, part in split_exactly(amount, weights).items():
            exact[team][pool] += part
    exact_total = sum(direct.values(), ZERO) + sum(pools.values(), ZERO)
    cents = _round_matrix(exact, exact_total)
    return Chargeback(
        period=period,
        currency=currency,
        basis=basis,
        methods=methods,
        teams=[TeamCharge(team, cents[team]) for team in teams],
        exact_total=exact_total,
        notes=notes,
        exact_cells=exact,
    )


def _weights(
    method: str,
    recipients: Sequence[str],
    direct: Mapping[str, Decimal],
    policy: SplitPolicy,
    notes: list[str],
    pool: str,
    amount: Decimal,
) -> dict[str, Decimal]:
    """Return each team's weight in a pool's split."""
    if method == "fixed":
        return dict(policy.shares)
    if method == "proportional":
        weights = {team: max(direct.get(team, ZERO), ZERO) for team in recipients}
        if sum(weights.values(), ZERO) > 0:
            return weights
        if amount != 0:
            notes.append(f"{pool}: no team spent this month, so it is split evenly")
    return dict.fromkeys(recipients, Decimal(1))


def split_exactly(amount: Decimal, weights: Mapping[str, Decimal]) -> dict[str, Decimal]:
    """Split an amount by weights; the parts add up to it exactly (the last takes the rest)."""
    total = sum(weights.values(), ZERO)
    if amount == 0 or not weights:
        return {}
    if total <= 0:
        raise UsageError("chargeback shares must add up to more than 0")
    names = sorted(weights)
    parts = {name: amount * weights[name] / total for name in names[:-1]}
    parts[names[-1]] = amount - sum(parts.values(), ZERO)
    return parts


def _round_matrix(
    exact: Mapping[str, Mapping[str, Decimal]], exact_total: Decimal
) -> dict[str, dict[str, Decimal]]:
    """Round a team x column matrix to cents keeping rows, columns and the total consistent."""
    column_totals = {c: sum((row[c] for row in exact.values()), ZERO) for c in COLUMNS}
    target = exact_total.quantize(CENT, rounding=ROUND_HALF_EVEN)
    rounded_columns = largest_remainder(column_totals, target)
    cents: dict[str, dict[str, Decimal]] = {team: {} for team in exact}
    for column in COLUMNS:
        cells = largest_remainder(
            {team: row[column] for team, row in exact.items()}, rounded_columns[column]
        )
        for team, value in cells.items():
            cents[team][column] = value
    return cents
