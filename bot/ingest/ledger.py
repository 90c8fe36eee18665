"""Write attributed spend to the ledger: one transaction, replace-by-scope, reconciled."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Table, and_, delete, func, insert, or_, select, text, update

from bot.config import AttributionSettings
from bot.db import tables
from bot.db.bulk_insert import insert_arrow
from bot.db.reading import Writer, connection_of, dialect_name
from bot.db.tables import utcnow
from bot.errors import IngestError
from bot.ingest.attribution import IDLE, AttributionRules, Attributor, ChargeFacts
from bot.ingest.gpu import gpus_per_unit
from bot.ingest.nodes import NodeOverlap, clear_node_offsets, resolve_nodes
from bot.ingest.overlap import Overlap, resolve_overlaps
from bot.ingest.rollup import refresh_rollup
from bot.ingest.sources.base import (
    IDLE_COLUMN,
    KEY_COLUMNS,
    NODE_COLUMN,
    NUL_PROBLEM,
    TAG_PREFIX,
    TAGS_JSON,
    Progress,
    ReplaceScope,
    SourceData,
    SpendSource,
    by_period,
    decimal_sum,
    row_tags,
    shown,
)
from bot.money import CENT, format_money_places, shown_parts
from bot.registry.stored import load_attribution_rules

# What attribution (and the GPU count) looks at; it runs once per distinct combination.
_FACT_COLUMNS = (
    "service",
    "service_category",
    "usage_type",
    "resource_id",
    "instance_type",
    "billing_account",
    "sub_account",
    "unit",
)
_ATTRIBUTION_COLUMNS = ("model", "stage", "team", "model_tag_value", "attribution", "run")
# a charge's key columns but its unit (the GPU count has used it), then its attribution
LEDGER_KEYS = (*(c for c in KEY_COLUMNS if c != "unit"), *_ATTRIBUTION_COLUMNS)
LEDGER_VALUES = ("billed_cost", "effective_cost", "usage_quantity", "gpu_hours")
_OPTIONAL_TEXT = (
    "sub_account",
    "service_category",
    "usage_type",
    "region",
    "resource_id",
    "instance_type",
)
_GPUS = pa.decimal128(3, 0)
_QUANTITY = pa.decimal128(34, 10)  # times a 3-digit GPU count, still within 38 digits


@dataclass(frozen=True)
class CurrencyTotals:
    """One currency's totals of an ingestion: billed = attributed + unallocated + idle, exactly.

    `idle` is idle cluster capacity (OpenCost's `__idle__`), kept apart from unallocated spend.
    """

    currency: str
    billed: Decimal
    effective: Decimal
    attributed: Decimal
    unallocated: Decimal
    idle: Decimal = Decimal(0)

    @property
    def reconciled(self) -> bool:
        """Return whether attributed + unallocated + idle equals billed exactly."""
        return self.attributed + self.unallocated + self.idle == self.billed

    def as_dict(self) -> dict[str, str]:
        names = ("billed", "effective", "attributed", "unallocated")
        totals = {name: str(getattr(self, name)) for name in names}
        if self.idle:
            totals["idle"] = str(self.idle)
        return totals


@dataclass
class IngestReport:
    """What one ingestion read and wrote, and the reconciliation, per billing currency."""

    run_id: int
    source: str
    location: str
    rows_read: int
    rows_written: int
    totals: list[CurrencyTotals]
    replaced_rows: int
    api_requests: int
    scopes: list[ReplaceScope] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # the same dollars also in the ledger from another source kind, counted once
    overlaps: list[Overlap] = field(default_factory=list)
    format: str = ""  # what the source read, when it tells versions apart ("FOCUS 1.2")
    # allocations on EC2 nodes whose instances the bill also charges, counted once
    nodes: list[NodeOverlap] = field(default_factory=list)

    @property
    def reconciled(self) -> bool:
        """Return whether attributed + unallocated equals billed exactly, in every currency."""
        return all(t.reconciled for t in self.totals)

    @property
    def currencies(self) -> list[str]:
        """Return the billing currencies read, sorted."""
        return [t.currency for t in self.totals]

    def _single(self, name: str) -> Decimal:
        if len(self.totals) > 1:
            raise ValueError(
                f"this ingestion was billed in {', '.join(self.currencies)}: its {name} total "
                "exists per currency only (see totals)"
            )
        return getattr(self.totals[0], name) if self.totals else Decimal(0)

    @property
    def billed_total(self) -> Decimal:
        """Return the billed total of a single-currency ingestion."""
        return self._single("billed")

    @property
    def effective_total(self) -> Decimal:
        """Return the effective total of a single-currency ingestion."""
        return self._single("effective")

    @property
    def attributed_total(self) -> Decimal:
        """Return the attributed total of a single-currency ingestion."""
        return self._single("attributed")

    @property
    def unallocated_total(self) -> Decimal:
        """Return the unallocated total of a single-currency ingestion."""
        return self._single("unallocated")

    def reconciliation_lines(self) -> list[str]:
        """Return the lines printed after every ingestion: one per billing currency."""
        if not self.totals:
            return ["reconciliation OK: nothing billed"]
        return [
            f"reconciliation {'OK' if t.reconciled else 'MISMATCH'}: {_balance(t)}"
            + "".join(
                f"; {o.describe(self.source)}" for o in self.overlaps if o.currency == t.currency
            )
            + "".join(f"; {n.describe()}" for n in self.nodes if n.currency == t.currency)
            for t in self.totals
        ]

    def reconciliation_line(self) -> str:
        """Return the reconciliation lines as one text."""
        return "\n".join(self.reconciliation_lines())


def _balance(t: CurrencyTotals) -> str:
    """Say `billed $3.00 = attributed $1.00 + unallocated $2.00` to the cent, the parts as shown
    adding up to the bill as shown (largest remainder)."""
    parts = [t.attributed, t.unallocated] + ([t.idle] if t.idle else [])
    if t.reconciled:
        shown, _ = shown_parts(parts, 2)
    else:  # a mismatch shows the amounts as they are
        shown = [part.quantize(CENT) for part in parts]
    money = [format_money_places(v, t.currency, 2) for v in [t.billed, *shown]]
    names = ["billed", "attributed", "unallocated", "idle"]
    words = [f"{name} {amount}" for name, amount in zip(names, money, strict=False)]
    return f"{words[0]} = " + " + ".join(words[1:])


def ingest(
    source: SpendSource,
    *,
    session: Writer,
    progress: Progress | None = None,
    attribution: AttributionSettings | None = None,
) -> IngestReport:
    """Read a source, attribute it, replace its scopes in the ledger; the caller commits.

    Ingestions write one at a time: on PostgreSQL a transaction-level advisory lock, taken once
    the source has been read, makes a second one wait for the first to commit, so its deletes
    see the rows the first wrote (under READ COMMITTED they would not: a concurrent re-ingestion
    of the same scope, or of overlapping days in the rollup, would count twice). SQLite allows a
    single writer anyway. `attribution`: the settings' tag keys, read where the registry names none.
    """
    rules = load_attribution_rules(session, defaults=attribution)
    data = source.read(rules.tag_keys_used(), progress)
    try:
        return _write(source, data, rules, session=session)
    finally:
        if data.spilled is not None:  # what was read went to disk: remove it, written or not
            data.spilled.close()


def _write(
    source: SpendSource, data: SourceData, rules: AttributionRules, *, session: Writer
) -> IngestReport:
    """Replace the source's scopes by what it read, attributed, and reconcile it."""
    lock_ledger(session)
    runs = tables.ingestion_runs
    run_id: int = session.execute(
        insert(runs)
        .values(
            source=source.kind,
            location=source.location,
            rows_read=data.rows_read,
            api_requests=data.api_requests,
            scopes=[s.as_dict() for s in data.scopes],
        )
        .returning(runs.c.id)
    ).scalar_one()
    # the days whose rollup must be summed again: those replaced, and those written below
    condition = scope_condition(data.scopes, kind=source.kind)
    touched = None if condition is None else _replaced_days(session, data.scopes, source.kind)
    replaced = replace_scopes(data.scopes, session=session, kind=source.kind)
    written = _write_ledger(data, rules, session=session, run_id=run_id, touched=touched)
    billed, attributed, touched = written.billed, written.attributed, written.touched
    if billed != data.billed_total:
        # Raising makes the caller roll back, the rows inserted above included.
        raise IngestError(
            f"{source.location}: internal reconciliation failed "
            f"(read {_amounts(data.billed_total)}, attributed {_amounts(billed)}); "
            "nothing was written"
        )
    overlaps: list[Overlap] = []
    nodes: list[NodeOverlap] = []
    if touched is not None:
        # node offsets are derived from what counts: drop them, settle which source counts
        # each account's day, then match allocations to the instances billed
        clear_node_offsets(session, *touched)
        overlaps = resolve_overlaps(session, *touched, kind=source.kind, run_id=run_id)
        nodes = resolve_nodes(session, *touched, run_id=run_id)
        refresh_rollup(session, *touched)
    totals = _currency_totals(billed, attributed, written.idle, data)
    outcome = _outcome(totals, written=written.rows, replaced=replaced)
    outcome["overlaps"] = [o.as_dict() for o in overlaps] + [n.as_dict() for n in nodes] or None
    session.execute(update(runs).where(runs.c.id == run_id).values(outcome))
    return IngestReport(
        run_id=run_id,
        source=source.kind,
        location=source.location,
        rows_read=data.rows_read,
        rows_written=written.rows,
        totals=totals,
        replaced_rows=replaced,
        api_requests=data.api_requests,
        scopes=data.scopes,
        notes=data.notes,
        overlaps=overlaps,
        format=data.detected_format,
        nodes=nodes,
    )


@dataclass
class _Written:
    """What attributing and inserting wrote: rows, billed, attributed, idle per currency, days."""

    rows: int = 0
    billed: dict[str, Decimal] = field(default_factory=dict)
    attributed: dict[str, Decimal] = field(default_factory=dict)
    idle: dict[str, Decimal] = field(default_factory=dict)
    touched: tuple[dt.date, dt.date] | None = None


def _write_ledger(
    data: SourceData,
    rules: AttributionRules,
    *,
    session: Writer,
    run_id: int,
    touched: tuple[dt.date, dt.date] | None,
) -> _Written:
    """Attribute the charges and insert the ledger rows; widen `touched` by the days written."""
    target = tables.daily_spend
    written = _Written(touched=touched)
    billed, attributed = written.billed, written.attributed
    for ledger in attribute_charges(data.charge_parts(), rules):
        written.rows += ledger.num_rows
        if ledger.num_rows:
            days = pc.min_max(ledger["day"])
            written.touched = _widen(written.touched, days["min"].as_py(), days["max"].as_py())
        for code in pc.unique(ledger["currency"]).to_pylist():
            rows = ledger.filter(pc.equal(ledger["currency"], code))
            billed[code] = billed.get(code, Decimal(0)) + decimal_sum(rows["billed_cost"])
            attributed[code] = attributed.get(code, Decimal(0)) + decimal_sum(
                pc.filter(rows["billed_cost"], pc.is_valid(rows["model"]))
            )
            idle = decimal_sum(pc.filter(rows["billed_cost"], pc.equal(rows["attribution"], IDLE)))
            if idle:
                written.idle[code] = written.idle.get(code, Decimal(0)) + idle
        run_ids = pc.fill_null(pa.nulls(ledger.num_rows, pa.int64()), run_id)
        insert_arrow(
            target, ledger.add_column(0, "run_id", run_ids), connection=connection_of(session)
        )
    return written


def _currency_totals(
    billed: dict[str, Decimal],
    attributed: dict[str, Decimal],
    idle: dict[str, Decimal],
    data: SourceData,
) -> list[CurrencyTotals]:
    """Return the run's totals per currency, in code order."""
    return [
        CurrencyTotals(
            currency=code,
            billed=billed.get(code, Decimal(0)),
            effective=data.effective_total.get(code, Decimal(0)),
            attributed=attributed.get(code, Decimal(0)),
            unallocated=billed.get(code, Decimal(0))
            - attributed.get(code, Decimal(0))
            - idle.get(code, Decimal(0)),
            idle=idle.get(code, Decimal(0)),
        )
        for code in sorted(set(billed) | set(data.billed_total))
    ]


def _outcome(totals: list[CurrencyTotals], *, written: int, replaced: int) -> dict[str, Any]:
    """Return a run's outcome: rows written and replaced, totals, succeeded now."""
    outcome: dict[str, Any] = {
        "rows_written": written,
        "currency_totals": {t.currency: t.as_dict() for t in totals},
        "replaced_rows": replaced,
        "status": "succeeded",
        "finished_at": utcnow(),
    }
    if len(totals) == 1:  # a run in several currencies has its totals per currency only
        outcome |= {
            "billed_total": totals[0].billed,
            "effective_total": totals[0].effective,
            "attributed_total": totals[0].attributed,
            "unallocated_total": totals[0].unallocated,
        }
    return outcome


def _amounts(by_currency: dict[str, Decimal]) -> str:
    return ", ".join(f"{amount} {code}" for code, amount in sorted(by_currency.items())) or "0"


# pg_advisory_xact_lock takes a bigint: a stable one derived from a name (not the scheduler's)
LEDGER_LOCK_KEY = int.from_bytes(hashlib.sha256(b"mlcost:ledger").digest()[:8], "big", signed=True)


def lock_ledger(session: Writer) -> None:
    """Wait until no other transaction writes the ledger; held until this one ends."""
    if dialect_name(session) == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LEDGER_LOCK_KEY})


def scope_condition(
    scopes: Iterable[ReplaceScope], *, kind: str, table: Table = tables.daily_spend
) -> Any:
    """Return the condition matching the rows of `kind` these scopes cover (None for no scope).

    A source replaces only what a source of its own kind wrote: another kind's rows of the same
    account and days are the same dollars seen twice, which bot.ingest.overlap counts once.
    """
    model, runs = table.c, tables.ingestion_runs.c
    conditions = []
    for scope in scopes:
        column = model.billing_period if scope.column == "billing_period" else model.day
        conditions.append(
            and_(
                model.provider == scope.provider,
                model.billing_account == scope.billing_account,
                column >= scope.start,
                column < scope.end,
            )
        )
    if not conditions:
        return None
    return and_(
        or_(*conditions),
        model.run_id.in_(select(runs.id).where(runs.source == kind)),
    )


def _replaced_days(
    session: Writer, scopes: list[ReplaceScope], kind: str
) -> tuple[dt.date, dt.date] | None:
    """Return the first and last day of the rows the scopes replace, set-aside rows included."""
    span = None
    for table in (tables.daily_spend, tables.overlapping_spend):
        first, last = session.execute(
            select(func.min(table.c.day), func.max(table.c.day)).where(
                scope_condition(scopes, kind=kind, table=table)
            )
        ).one()
        if first is not None:
            span = _widen(span, first, last)
    return span


def replace_scopes(scopes: Iterable[ReplaceScope], *, session: Writer, kind: str) -> int:
    """Delete the rows of `kind` that these scopes cover (set-aside ones too); return how many."""
    scopes = list(scopes)
    removed = 0
    for table in (tables.daily_spend, tables.overlapping_spend):
        condition = scope_condition(scopes, kind=kind, table=table)
        if condition is None:
            return 0
        result = session.execute(delete(table).where(condition))
        removed += int(getattr(result, "rowcount", 0) or 0)
    return removed


def _widen(span: tuple[dt.date, dt.date] | None, first: Any, last: Any) -> tuple[dt.date, dt.date]:
    if span is None:
        return first, last
    return min(span[0], first), max(span[1], last)


def attribute_charges(
    charges: pa.Table | Iterable[pa.Table], rules: AttributionRules
) -> Iterator[pa.Table]:
    """Attribute grouped charges and fold them into ledger rows, one part at a time.

    A table is taken one billing period at a time; parts (SourceData.charge_parts) as they come,
    each holding every charge of its keys. Attribution runs once per distinct set of facts it
    reads, not once per row, and remembers them for the parts that follow.
    """
    parts = (p for _, p in by_period(charges)) if isinstance(charges, pa.Table) else charges
    facts = _FactAttribution(Attributor(rules))
    for charges_part in parts:
        if charges_part.num_rows == 0:
            continue
        tag_cols = [
            c for c in charges_part.column_names if c.startswith(TAG_PREFIX) or c == TAGS_JSON
        ]
        idle_col = [IDLE_COLUMN] if IDLE_COLUMN in charges_part.column_names else []
        fact_cols = [*_FACT_COLUMNS, *tag_cols, *idle_col]
        part = _blank_nulls(charges_part, fact_cols)
        yield _fold(facts.add_to(part, fact_cols))


class _FactAttribution:
    """Attribution results by distinct facts, kept across parts.

    A charge's facts are joined into one text key with NUL between them: no ledger text holds a
    NUL (GroupedCharges refuses it), so the key splits back into exactly its values, and a key
    that does not names the NUL. Keys are hashed by Arrow; only new ones reach Python.
    """

    def __init__(self, attributor: Attributor) -> None:
        self.attributor = attributor
        self.wanted = attributor.rules.tag_keys_used()
        self.ids: dict[tuple[str, ...], dict[str, int]] = {}
        self.found: dict[str, list[Any]] = {name: [] for name in (*_ATTRIBUTION_COLUMNS, "gpus")}
        self._arrays: dict[str, pa.Array] = {}

    def add_to(self, part: pa.Table, fact_cols: list[str]) -> pa.Table:
        """Return the part with the attribution and GPU count columns of each row's facts."""
        texts = [pc.cast(part[name], pa.string()) for name in fact_cols]
        keys = pc.binary_join_element_wise(*texts, "\x00").combine_chunks()
        encoded = pc.dictionary_encode(keys)
        ids = self.ids.setdefault(tuple(fact_cols), {})
        unique_ids = []
        for key in encoded.dictionary.to_pylist():
            at = ids.get(key)
            if at is None:
                at = ids[key] = self._attribute(fact_cols, key)
            unique_ids.append(at)
        rows = pc.take(pa.array(unique_ids, pa.int64()), encoded.indices)
        columns = {name: part[name] for name in part.column_names}
        for name in self.found:
            columns[name] = pc.take(self._array(name), rows)
        return pa.table(columns)

    def _array(self, name: str) -> pa.Array:
        values = self.found[name]
        array = self._arrays.get(name)
        if array is None or len(array) != len(values):
            kind = _GPUS if name == "gpus" else pa.string()
            array = self._arrays[name] = pa.array(values, kind)
        return array

    def _attribute(self, fact_cols: list[str], key: str) -> int:
        values = key.split("\x00")
        if len(values) != len(fact_cols):  # pragma: no cover - GroupedCharges refused it
            raise IngestError(f"a charge's text {NUL_PROBLEM}: {shown(key)}")
        row: dict[str, Any] = dict(zip(fact_cols, values, strict=True))
        result = self.attributor(
            ChargeFacts(
                service=row["service"],
                tags=row_tags(row, self.wanted),
                service_category=row["service_category"] or None,
                usage_type=row["usage_type"] or None,
                resource_id=row["resource_id"] or None,
                instance_type=row["instance_type"] or None,
                billing_account=row["billing_account"] or None,
                sub_account=row["sub_account"] or None,
                idle=row.get(IDLE_COLUMN) == "true",
            )
        )
        found = self.found
        found["model"].append(result.model)
        found["stage"].append(result.stage)
        found["team"].append(result.team)
        found["model_tag_value"].append(result.model_tag_value)
        found["attribution"].append(result.rule)
        found["run"].append(result.run)
        gpus = gpus_per_unit(row["instance_type"], row["unit"])  # GPU-hours: 1
        found["gpus"].append(Decimal(gpus))
        return len(found["gpus"]) - 1


def _blank_nulls(table: pa.Table, names: list[str]) -> pa.Table:
    """Replace nulls by empty strings in these columns (join keys: a null never matches)."""
    for name in names:
        column = table[name]
        if column.null_count:
            blank = False if pa.types.is_boolean(column.type) else ""
            table = table.set_column(
                table.column_names.index(name), name, pc.fill_null(column, blank)
            )
    return table


def _fold(rows: pa.Table) -> pa.Table:
    """Turn attributed charges into ledger rows: DailySpend's columns, one row per key."""
    table: dict[str, Any] = {}
    for name in LEDGER_KEYS:
        column = rows[name]
        if name in _OPTIONAL_TEXT:
            column = pc.if_else(pc.equal(column, ""), pa.scalar(None, pa.string()), column)
        elif name == "charge_category":
            column = pc.if_else(pc.equal(column, ""), "Usage", column)
        elif name == "estimated":
            column = pc.fill_null(column, False)
        table[name] = column
    keys = list(LEDGER_KEYS)
    if NODE_COLUMN in rows.column_names:  # a Kubernetes allocation's EC2 instance
        node = rows[NODE_COLUMN]
        table[NODE_COLUMN] = pc.if_else(pc.equal(node, ""), pa.scalar(None, pa.string()), node)
        keys.append(NODE_COLUMN)
    table["billed_cost"] = rows["billed"]
    table["effective_cost"] = rows["effective"]
    table["usage_quantity"] = rows["quantity"]
    table["gpu_hours"] = pc.multiply(pc.cast(rows["quantity"], _QUANTITY), rows["gpus"])
    folded = pa.table(table).group_by(keys, use_threads=False)
    sums = folded.aggregate([(v, "sum") for v in LEDGER_VALUES])
    return sums.rename_columns([c.removesuffix("_sum") for c in sums.column_names])
