"""Kubernetes allocations on EC2 nodes that the bill also charges: the node's dollars once.

OpenCost prices each node and splits its cost among the pods on it (and the node's idle
capacity, with `idleByNode`); the bill (CUR, Athena, FOCUS, or OpenCost's own `/cloudCost`)
charges the same instance. For each instance, day and currency held by both, with X the
allocations' cost on the node and Y the bill's cost for the instance:

- **the bill counts**: the ledger keeps Y. The allocations keep min(X, Y) at their own
  attribution (model, team, stage, namespace), and a `node_offset` row on the bill side takes
  that amount off the instance's rows, in proportion to them; the instance keeps Y - min(X, Y)
  at its own attribution (capacity no allocation claimed, or a price OpenCost did not know).
- **allocations above the bill are not billed**: when X > Y each allocation gives up its share
  of X - Y (a `node_offset` row takes it off in daily_spend; its copy in overlapping_spend
  records what was set aside).

Billed cost, effective cost and GPU-hours are each matched on their own. The offsets are
recomputed from the ledger whenever an ingestion touches their days, so the ledger ends the
same whatever the order and however often a source is ingested again.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_DOWN, Decimal, localcontext
from typing import Any

from sqlalchemy import Table, delete, insert, or_, select

from bot.db.reading import Writer
from bot.db.tables import daily_spend, ingestion_runs, overlapping_spend
from bot.ingest.attribution import IDLE
from bot.money import format_money_places

KUBERNETES = "Kubernetes"
# what is matched, each on its own, and the places each is kept to in the ledger
MATCHED = {
    "billed_cost": Decimal("1E-10"),
    "effective_cost": Decimal("1E-10"),
    "gpu_hours": Decimal("1E-6"),
}
# an EC2 instance id: a providerID's (`i-0abc...`, `aws:///us-east-1a/i-0abc...`) or a bill's
# resource id (`i-0abc...`, `arn:aws:ec2:us-east-1:123456789012:instance/i-0abc...`)
_EC2_INSTANCE = re.compile(r"(?:^|/)(i-[0-9a-f]{8,17})$")
_IN_CHUNK = 500

Row = dict[str, Any]
# the offset rows to write: into daily_spend, and into overlapping_spend
_Offsets = tuple[list[Row], list[Row]]


def ec2_instance(identifier: Any) -> str:
    """Return the EC2 instance id a providerID or resource id names, else an empty string."""
    found = _EC2_INSTANCE.search(str(identifier or "").strip())
    return found.group(1) if found else ""


@dataclass(frozen=True)
class NodeOverlap:
    """Allocations on EC2 nodes whose instances the bill also charges, counted once."""

    allocations: bool  # said for the ingestion of the allocations (else of the bill)
    counted_by: str  # the kind whose rows bill the instances
    nodes: int
    first_day: dt.date
    last_day: dt.date
    currency: str
    amount: Decimal  # billed by both, counted once (at the allocations' attribution)
    above_bill: Decimal  # the allocations' cost above the bill, set aside
    # idle capacity of these nodes' clusters on those days that names no node (no idleByNode)
    unplaced_idle: Decimal = Decimal(0)
    clusters: tuple[str, ...] = ()

    def describe(self) -> str:
        """Say it for the reconciliation line."""
        plural = "" if self.nodes == 1 else "s"
        if not self.allocations:
            return (
                f"{_cents(self.amount, self.currency)} of {self.nodes} EC2 instance{plural} "
                "also in OpenCost allocations, counted once"
            )
        said = (
            f"{_cents(self.amount, self.currency)} of OpenCost allocations on {self.nodes} EC2 "
            f"node{plural} also billed by {self.counted_by}, counted once"
        )
        if self.above_bill:
            said += f"; {_cents(self.above_bill, self.currency)} above the bill set aside"
        if self.unplaced_idle:
            plural = "" if len(self.clusters) == 1 else "s"
            said += (
                f"; idle {_cents(self.unplaced_idle, self.currency)} of cluster{plural} "
                f"{', '.join(self.clusters)} names no node, so the bill may count it too "
                "(ask OpenCost with idleByNode=true)"
            )
        return said

    def as_dict(self) -> dict[str, str]:
        return {
            "nodes": str(self.nodes),
            "counted_by": self.counted_by,
            "set_aside": "opencost allocations above the bill",
            "first_day": self.first_day.isoformat(),
            "last_day": self.last_day.isoformat(),
            "currency": self.currency,
            "amount": str(self.amount),
            "above_bill": str(self.above_bill),
            "unplaced_idle": str(self.unplaced_idle),
        }


def clear_node_offsets(session: Writer, first: dt.date, last: dt.date) -> None:
    """Delete the node offset rows of the days first..last (both tables)."""
    for table in (daily_spend, overlapping_spend):
        session.execute(
            delete(table).where(
                table.c.node_offset.is_(True), table.c.day >= first, table.c.day <= last
            )
        )


def resolve_nodes(
    session: Writer, first: dt.date, last: dt.date, *, run_id: int
) -> list[NodeOverlap]:
    """Count once the nodes both allocated and billed on the days first..last.

    Call after clear_node_offsets over the same days. Return the overlaps whose rows the
    ingestion `run_id` wrote, one per side, billing kind and currency.
    """
    ledger = daily_spend
    allocations = [
        dict(row)
        for row in session.execute(
            select(ledger).where(
                ledger.c.provider == KUBERNETES,
                ledger.c.node.is_not(None),
                ledger.c.node_offset.is_(False),
                ledger.c.day >= first,
                ledger.c.day <= last,
            )
        ).mappings()
    ]
    if not allocations:
        return []
    bills = _billed_instances(session, first, last, {r["node"] for r in allocations})
    kinds = _kinds(session, {r["run_id"] for r in bills})
    on_node: dict[tuple[str, dt.date, str], list[Row]] = {}
    for row in allocations:
        on_node.setdefault((row["node"], row["day"], row["currency"]), []).append(row)
    found: dict[tuple[bool, str, str], _Found] = {}
    offsets: _Offsets = ([], [])
    for key, billed in sorted(_group(bills).items()):
        allocated = on_node.get(key)
        if not allocated:
            continue
        counted_by = kinds[max(billed, key=lambda r: r["billed_cost"])["run_id"]]
        moved, above = _count_once(offsets, key[0], billed, allocated, counted_by)
        if not moved and not above:
            continue
        sides = [run_id in {r["run_id"] for r in rows} for rows in (allocated, billed)]
        for allocations_side, involved in zip((True, False), sides, strict=True):
            if involved:
                entry = found.setdefault((allocations_side, counted_by, key[2]), _Found())
                entry.add(key[0], key[1], moved, above)
                entry.clusters.update((r["billing_account"], key[1]) for r in allocated)
    _insert(session, daily_spend, offsets[0])
    _insert(session, overlapping_spend, offsets[1])
    overlaps = []
    for (side, counted_by, currency), entry in sorted(
        found.items(), key=lambda item: (not item[0][0], item[0][1], item[0][2])
    ):
        idle = _unplaced_idle(session, entry.clusters, currency) if side else {}
        overlaps.append(
            NodeOverlap(
                allocations=side,
                counted_by=counted_by,
                nodes=len(entry.nodes),
                first_day=min(entry.days),
                last_day=max(entry.days),
                currency=currency,
                amount=entry.amount,
                above_bill=entry.above,
                unplaced_idle=sum(idle.values(), Decimal(0)),
                clusters=tuple(sorted(idle)),
            )
        )
    return overlaps


@dataclass
class _Found:
    """What one side, billing kind and currency matched: nodes, days, amounts, cluster days."""

    nodes: set[str] = field(default_factory=set)
    days: set[dt.date] = field(default_factory=set)
    amount: Decimal = Decimal(0)
    above: Decimal = Decimal(0)
    clusters: set[tuple[str, dt.date]] = field(default_factory=set)

    def add(self, node: str, day: dt.date, moved: Decimal, above: Decimal) -> None:
        self.nodes.add(node)
        self.days.add(day)
        self.amount += moved
        self.above += above


def _unplaced_idle(
    session: Writer, cluster_days: set[tuple[str, dt.date]], currency: str
) -> dict[str, Decimal]:
    """Return, per cluster, its idle cost on these days that names no node."""
    ledger = daily_spend
    days = {day for _cluster, day in cluster_days}
    rows = session.execute(
        select(ledger.c.billing_account, ledger.c.day, ledger.c.billed_cost).where(
            ledger.c.provider == KUBERNETES,
            ledger.c.attribution == IDLE,
            ledger.c.node.is_(None),
            ledger.c.node_offset.is_(False),
            ledger.c.currency == currency,
            ledger.c.day.in_(sorted(days)),
            ledger.c.billing_account.in_(sorted({c for c, _day in cluster_days})),
        )
    )
    idle: dict[str, Decimal] = {}
    for cluster, day, cost in rows:
        if (cluster, day) in cluster_days and cost:
            idle[cluster] = idle.get(cluster, Decimal(0)) + Decimal(cost)
    return idle


def _billed_instances(session: Writer, first: dt.date, last: dt.date, nodes: set[str]) -> list[Row]:
    """Return the ledger's bill rows (any provider but Kubernetes) charging these instances."""
    ledger = daily_spend
    ids = sorted(nodes)
    found: dict[int, Row] = {}
    for start in range(0, max(len(ids), 1), _IN_CHUNK):
        chunk = ids[start : start + _IN_CHUNK]
        rows = session.execute(
            select(ledger).where(
                ledger.c.provider != KUBERNETES,
                ledger.c.node_offset.is_(False),
                ledger.c.day >= first,
                ledger.c.day <= last,
                or_(ledger.c.resource_id.in_(chunk), ledger.c.resource_id.like("%instance/i-%")),
            )
        ).mappings()
        for row in rows:
            instance = ec2_instance(row["resource_id"])
            if instance in nodes:
                found[row["id"]] = {**row, "node": instance}
    return list(found.values())


def _kinds(session: Writer, run_ids: Iterable[int]) -> dict[int, str]:
    ids = sorted(run_ids)
    if not ids:
        return {}
    return dict(
        session.execute(
            select(ingestion_runs.c.id, ingestion_runs.c.source).where(ingestion_runs.c.id.in_(ids))
        ).all()
    )


def _group(rows: Iterable[Row]) -> dict[tuple[str, dt.date, str], list[Row]]:
    grouped: dict[tuple[str, dt.date, str], list[Row]] = {}
    for row in rows:
        grouped.setdefault((row["node"], row["day"], row["currency"]), []).append(row)
    return grouped


def _count_once(
    offsets: _Offsets, node: str, billed: list[Row], allocated: list[Row], counted_by: str
) -> tuple[Decimal, Decimal]:
    """Add one instance-day's offset rows; return the billed cost moved and the cost set aside."""
    taken: dict[int, Row] = {}  # per bill row: what moves to the allocations (negative)
    given_up: dict[int, Row] = {}  # per allocation: what is above the bill (positive)
    moved = above = Decimal(0)
    for name, places in MATCHED.items():
        weights = [max(Decimal(r[name]), Decimal(0)) for r in allocated]
        x = sum(weights, Decimal(0))
        y = sum((Decimal(r[name]) for r in billed), Decimal(0))
        counted = max(Decimal(0), min(x, y))
        shares = _split(counted, [max(Decimal(r[name]), Decimal(0)) for r in billed], places)
        for row, share in zip(billed, shares, strict=True):
            taken.setdefault(row["id"], {})[name] = -share
        kept = weights if counted == x else _split(counted, weights, places)
        for row, weight, keep in zip(allocated, weights, kept, strict=True):
            given_up.setdefault(row["id"], {})[name] = weight - keep
        if name == "billed_cost":
            moved, above = counted, x - counted
    ledger, set_aside = offsets
    ledger.extend(_offset(row, taken[row["id"]], node) for row in billed)
    for row in allocated:
        if any(given_up[row["id"]].values()):
            back = {k: -v for k, v in given_up[row["id"]].items()}
            ledger.append(_offset(row, back, node))
            set_aside.append({**_offset(row, given_up[row["id"]], node), "counted_by": counted_by})
    return moved, above


def _split(total: Decimal, weights: Sequence[Decimal], places: Decimal) -> list[Decimal]:
    """Split `total` in proportion to the weights, to `places`, adding up exactly."""
    whole = sum(weights, Decimal(0))
    if total == 0 or whole <= 0:
        return [Decimal(0)] * len(weights)
    with localcontext() as context:
        context.prec = 60
        shares = [(total * w / whole).quantize(places, rounding=ROUND_DOWN) for w in weights]
    largest = max(range(len(weights)), key=lambda i: weights[i])
    shares[largest] += total - sum(shares, Decimal(0))
    return shares


def _offset(row: Mapping[str, Any], values: Mapping[str, Decimal], node: str) -> Row:
    """Return a node offset row: the row's columns, these amounts, no usage quantity."""
    offset = {k: v for k, v in row.items() if k != "id"}
    offset.update(values, usage_quantity=Decimal(0), node=node, node_offset=True)
    return offset


def _insert(session: Writer, table: Table, rows: list[Row]) -> None:
    rows = [r for r in rows if any(r[name] for name in MATCHED)]
    if not rows:
        return
    names = {c.name for c in table.columns}
    session.execute(insert(table), [{k: v for k, v in r.items() if k in names} for r in rows])


def _cents(amount: Decimal, currency: str) -> str:
    """Render an amount to the cent as the ingestion's reconciliation line does."""
    return format_money_places(amount, currency, 2)
