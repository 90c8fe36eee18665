"""The one interface every spend source implements, and the Arrow plumbing they share."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Context, Decimal
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bot.counts import counted
from bot.errors import IngestError
from bot.ingest.attribution import normalize_tag_key, normalize_tags
from bot.ingest.sources.spill import ChargeSpill

COST_TYPE = pa.decimal128(30, 10)  # headroom: sums widen to 38 digits
KEY_COLUMNS = (
    "day",
    "billing_period",
    "provider",
    "billing_account",
    "sub_account",
    "service",
    "service_category",
    "usage_type",
    "region",
    "resource_id",
    "instance_type",
    "charge_category",
    "currency",
    "unit",
    "estimated",
)
VALUE_COLUMNS = ("billed", "effective", "quantity")
TAG_PREFIX = "tag."
TAGS_JSON = "tags_json"
# Optional boolean key column: true on a charge for idle cluster capacity (attribution "idle").
IDLE_COLUMN = "idle"
# Optional string key column: the EC2 instance under a Kubernetes allocation (ledger `node`).
NODE_COLUMN = "node"
# A unit whose quantity already counts GPU-hours (OpenCost allocations): one GPU per unit.
GPU_HOURS_UNIT = "GPU-hours"
DEFAULT_CURRENCY = "USD"
_CURRENCY_RE = re.compile(r"^[A-Z]{3}$")
# The charge days the ledger accepts: a bill from before 2000 or after 2099 is a broken export
# (a 9999-12-31 "open end", an epoch zero), and one such day would stretch every report and the
# rollup across centuries.
FIRST_CHARGE_DAY, LAST_CHARGE_DAY = dt.date(2000, 1, 1), dt.date(2099, 12, 31)
_DAYS = f"{FIRST_CHARGE_DAY}..{LAST_CHARGE_DAY}"
# PostgreSQL text cannot hold a NUL; SQLite could, and is refused alike so both ledgers agree.
NUL_PROBLEM = "has a NUL byte (\\x00), which the ledger cannot store"


class RowError(IngestError):
    """One value of a billing row the ledger cannot take (a NUL byte, an impossible date).

    `row` counts from 0 in the batch where it was found (None: no row to name, e.g. grouped
    charges); a file source adds the rows before that batch and names the file.
    """

    def __init__(self, row: int | None, column: str, problem: str) -> None:
        self.row, self.column, self.problem = row, column, problem
        super().__init__(self.describe(None if row is None else row + 1))

    def describe(self, row_number: int | None) -> str:
        """Say what is wrong where: `row N, column X: problem` (N counts data rows from 1)."""
        where = "" if row_number is None else f"row {row_number:,}, "
        return f"{where}column {self.column}: {self.problem}"


def shown(value: Any) -> str:
    """Return a value as a message shows it: escaped (a NUL reads \\x00), at most 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _first(mask: pa.Array | pa.ChunkedArray) -> int | None:
    """Return the index of the first true value of a boolean column, or None."""
    index = pc.index(pc.fill_null(mask, False), True).as_py()
    return None if index is None or index < 0 else int(index)


def nul_mask(column: pa.Array | pa.ChunkedArray) -> pa.Array | None:
    """Return, per row, whether a string anywhere in the value holds a NUL byte.

    Strings, dictionary-encoded strings, and lists, maps and structs of them are looked into;
    None for columns of other types.
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return pc.fill_null(pc.match_substring(column, "\x00"), False)
    if pa.types.is_dictionary(kind):
        inner = nul_mask(column.dictionary)
        return None if inner is None else pc.fill_null(pc.take(inner, column.indices), False)
    if pa.types.is_map(kind):  # as the list of (key, value) structs it is
        entry = pa.struct(
            [pa.field("key", kind.key_type, nullable=False), pa.field("value", kind.item_type)]
        )
        return nul_mask(column.cast(pa.list_(entry)))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        inner = nul_mask(pc.list_flatten(column))
        if inner is None:
            return None
        found = [False] * len(column)
        for row in pc.filter(pc.list_parent_indices(column), inner).to_pylist():
            found[row] = True
        return pa.array(found, pa.bool_())
    if pa.types.is_struct(kind):
        fields = [nul_mask(column.field(i)) for i in range(kind.num_fields)]
        present = [m for m in fields if m is not None]
        if not present:
            return None
        result = present[0]
        for mask in present[1:]:
            result = pc.or_(result, mask)
        return result
    return None


def check_no_nul(table: pa.Table, *, with_rows: bool = True) -> None:
    """Refuse the first value with a NUL byte (see NUL_PROBLEM)."""
    for name in table.column_names:
        mask = nul_mask(table[name])
        row = None if mask is None else _first(mask)
        if row is not None:
            raise RowError(
                row if with_rows else None,
                name,
                f"{NUL_PROBLEM}: {shown(table[name][row].as_py())}",
            )


def check_days(days: pa.Array | pa.ChunkedArray, what: str, *, with_rows: bool = True) -> None:
    """Refuse a charge day outside FIRST_CHARGE_DAY..LAST_CHARGE_DAY."""
    outside = pc.or_(
        pc.less(days, pa.scalar(FIRST_CHARGE_DAY)), pc.greater(days, pa.scalar(LAST_CHARGE_DAY))
    )
    row = _first(outside)
    if row is not None:
        raise RowError(
            row if with_rows else None,
            what,
            f"{days[row].as_py()} is outside the charge days mlcost accepts ({_DAYS})",
        )


def check_period_end(
    start: pa.Array | pa.ChunkedArray,
    end: pa.Array | pa.ChunkedArray,
    start_name: str,
    end_name: str,
) -> None:
    """Refuse a charge period that ends before it starts, or ends after LAST_CHARGE_DAY."""
    start_at, end_at = as_timestamp(start, start_name), as_timestamp(end, end_name)
    limit = dt.datetime.combine(LAST_CHARGE_DAY + dt.timedelta(days=1), dt.time(), dt.UTC)
    row = _first(pc.greater(end_at, pa.scalar(limit, end_at.type)))
    if row is not None:
        raise RowError(
            row,
            end_name,
            f"{end_at[row].as_py()} is after the charge days mlcost accepts ({_DAYS})",
        )
    row = _first(pc.less(end_at, start_at))
    if row is not None:
        raise RowError(
            row,
            end_name,
            f"{end_at[row].as_py()} is before {start_name} {start_at[row].as_py()}: "
            "a charge period cannot end before it starts",
        )


class Progress(Protocol):
    """Where a source reports how far its read got (the CLI draws a bar; None reports nothing).

    `set_total` says how many units of work there are (files; None when unknown, e.g. pages of
    an API answer) and what they are called; `advance` counts units done and rows read.
    """

    def set_total(self, total: int | None, unit: str | None = None) -> None: ...

    def advance(self, done: int = 0, rows: int = 0) -> None: ...


@dataclass(frozen=True)
class ReplaceScope:
    """Ledger rows a new ingestion replaces: by billing period (exports) or by day (polls)."""

    provider: str
    billing_account: str
    column: str  # "billing_period" or "day"
    start: dt.date
    end: dt.date  # exclusive

    def as_dict(self) -> dict[str, str]:
        return {
            "provider": self.provider,
            "billing_account": self.billing_account,
            "column": self.column,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
        }


@dataclass
class SourceData:
    """What a source read: grouped charges plus the facts needed to reconcile and replace.

    The totals are per currency: amounts billed in different currencies are never added.
    """

    charges: pa.Table
    rows_read: int
    billed_total: dict[str, Decimal]
    effective_total: dict[str, Decimal]
    scopes: list[ReplaceScope]
    api_requests: int = 0
    notes: list[str] = field(default_factory=list)
    # What was read, when a source tells formats or versions apart ("FOCUS 1.2").
    detected_format: str = ""
    # Grouped charges too many to hold in memory, on disk (`charges` is then empty).
    spilled: ChargeSpill | None = None

    def charge_parts(self) -> Iterator[pa.Table]:
        """Yield the grouped charges in parts: by billing period, or by day bucket once spilled.

        A charge's key is in one part only.
        """
        if self.spilled is not None:
            yield from self.spilled.parts()
            return
        for _, part in by_period(self.charges):
            yield part


class SpendSource(Protocol):
    """A billing source: reads everything it covers in one call."""

    kind: str
    location: str

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData: ...


class GroupedCharges:
    """Aggregate Arrow batches by the key columns, keeping memory bound by distinct groups.

    Groups never span billing periods, so each period is merged on its own. With `spill_after`,
    once more than that many partial groups are held they go to disk by day (see
    bot/ingest/sources/spill.py): memory then stays bound however many groups a bill has.
    Each charge keeps its billing currency (a 3-letter ISO 4217 code); a charge without one
    takes `default_currency`, and `notes()` says how many did.
    """

    def __init__(
        self,
        compact_every: int = 16,
        *,
        default_currency: str = DEFAULT_CURRENCY,
        currency_field: str = "currency",
        default_reason: str = "MLCOST_CURRENCY",
        spill_after: int | None = None,
    ) -> None:
        self._periods: dict[Any, list[pa.Table]] = {}
        self._compact_every = compact_every
        self._spill_after = spill_after
        self._held = 0  # rows of the partials in memory
        self.spill: ChargeSpill | None = None
        self.rows = 0
        self.billed: dict[str, Decimal] = {}
        self.effective: dict[str, Decimal] = {}
        self.default_currency = check_currency(default_currency, default_reason)
        self.currency_field = currency_field
        self.default_reason = default_reason
        self.defaulted = 0
        self._grouped_input = False

    def add(self, table: pa.Table, rows: int | None = None) -> None:
        """Add one canonical batch (key columns, tag columns and decimal values).

        `rows` is how many source rows the batch stands for when it is already grouped (it may
        still repeat a key; merging groups it again).
        """
        self.rows += table.num_rows if rows is None else rows
        self._grouped_input = self._grouped_input or rows is not None
        if table.num_rows == 0:
            return
        _check_charges(table)
        table = self._with_currency(table)
        sums = table.group_by("currency", use_threads=False).aggregate(
            [("billed", "sum"), ("effective", "sum")]
        )
        for row in sums.to_pylist():
            code = row["currency"]
            self.billed[code] = self.billed.get(code, Decimal(0)) + Decimal(row["billed_sum"])
            self.effective[code] = self.effective.get(code, Decimal(0)) + Decimal(
                row["effective_sum"]
            )
        for period, part in by_period(table if rows is not None else _group(table)):
            partials = self._periods.setdefault(period, [])
            partials.append(part)
            self._held += part.num_rows
            if len(partials) >= self._compact_every:
                merged = self._periods[period] = [_merge(partials)]
                self._held += merged[0].num_rows - sum(p.num_rows for p in partials)
        if self._spill_after is not None and self._held > self._spill_after:
            self._write_spill()

    def discard(self) -> None:
        """Drop what was read, removing what went to disk."""
        self._periods.clear()
        if self.spill is not None:
            self.spill.close()

    def _write_spill(self) -> None:
        """Move the partial groups held in memory to disk."""
        if self.spill is None:
            self.spill = ChargeSpill(_merge, merge_rows=self._spill_after or 0)
        for partials in self._periods.values():
            self.spill.write(_merge(partials))
        self._periods.clear()
        self._held = 0

    def _with_currency(self, table: pa.Table) -> pa.Table:
        """Upper-case and check the currency column; fill blanks with the default."""
        if "currency" not in table.column_names:
            table = table.append_column("currency", as_string(None, len(table)))
        at = table.column_names.index("currency")
        codes = pc.utf8_trim_whitespace(as_string(table["currency"], len(table)))
        for code in pc.unique(codes).to_pylist():
            if code:
                check_currency(code, self.currency_field)
        codes = pc.utf8_upper(codes)
        blank = pc.equal(codes, "")
        missing = pc.sum(blank).as_py() or 0
        if missing:
            self.defaulted += missing
            codes = pc.if_else(blank, self.default_currency, codes)
        return table.set_column(at, "currency", codes)

    def notes(self) -> list[str]:
        """Say how many charges took the default currency, if any did."""
        if not self.defaulted:
            return []
        what = "grouped charge" if self._grouped_input else "row"
        return [
            f"{counted(self.defaulted, what)} had no {self.currency_field}; counted in "
            f"{self.default_currency} ({self.default_reason})"
        ]

    def result(self) -> pa.Table:
        """Return the grouped charges (one chunk per billing period); empty once spilled, when
        they are all in `spill`."""
        if self.spill is not None:
            self._write_spill()
            return empty_charges()
        if not self._periods:
            return empty_charges()
        for period, partials in self._periods.items():
            self._periods[period] = [_merge(partials)]  # frees the partials as it goes
        merged = [partials[0] for partials in self._periods.values()]
        return pa.concat_tables(merged, promote_options="default")


def _check_charges(table: pa.Table) -> None:
    """Refuse what no ledger row may hold, whichever source read it (rows are not named here:
    file sources name them as they read)."""
    check_no_nul(table, with_rows=False)
    if TAGS_JSON in table.column_names:  # JSON writes a NUL in a tag value as \u0000
        escaped = pc.match_substring_regex(table[TAGS_JSON], r"(^|[^\\])(\\\\)*\\u0000")
        row = _first(escaped)
        if row is not None:
            value = json.loads(table[TAGS_JSON][row].as_py())
            raise RowError(
                None,
                "tags",
                f"{NUL_PROBLEM}: {shown(value)}",
            )
    for name in ("day", "billing_period"):
        if name in table.column_names:
            check_days(table[name], name, with_rows=False)


def by_period(table: pa.Table) -> Iterator[tuple[Any, pa.Table]]:
    """Yield (billing period, its charges) for each billing period in the table."""
    periods = pc.unique(table["billing_period"])
    if len(periods) == 1:
        yield periods[0].as_py(), table
        return
    for period in periods:
        yield period.as_py(), table.filter(pc.equal(table["billing_period"], period))


def _merge(partials: list[pa.Table]) -> pa.Table:
    # Permissive: batches added already grouped may carry narrower decimals than grouped sums.
    return _group(pa.concat_tables(partials, promote_options="permissive"))


def check_currency(code: str, what: str) -> str:
    """Return the code, upper-cased, if it is a 3-letter ISO 4217 code; raise IngestError if not."""
    if not _CURRENCY_RE.fullmatch(code.upper()):
        raise IngestError(
            f"{what} has {code[:40]!r}, which is not a 3-letter ISO 4217 currency code "
            "such as USD or EUR"
        )
    return code.upper()


def decimal_sum(column: pa.ChunkedArray | pa.Array) -> Decimal:
    """Return the exact sum of a decimal column (zero when empty)."""
    total = pc.sum(column).as_py()
    return Decimal(0) if total is None else Decimal(total)


def _group(table: pa.Table) -> pa.Table:
    keys = [c for c in table.column_names if c not in VALUE_COLUMNS]
    grouped = table.group_by(keys, use_threads=False).aggregate([(v, "sum") for v in VALUE_COLUMNS])
    return grouped.rename_columns([c.removesuffix("_sum") for c in grouped.column_names])


def empty_charges() -> pa.Table:
    """Return an empty canonical table."""
    fields = [pa.field(c, pa.string()) for c in KEY_COLUMNS]
    fields[0] = pa.field("day", pa.date32())
    fields[1] = pa.field("billing_period", pa.date32())
    fields[KEY_COLUMNS.index("estimated")] = pa.field("estimated", pa.bool_())
    fields += [pa.field(v, COST_TYPE) for v in VALUE_COLUMNS]
    return pa.schema(fields).empty_table()


# --- column helpers -----------------------------------------------------------------------


def as_string(column: pa.Array | pa.ChunkedArray | None, length: int) -> pa.Array:
    """Return a string column with nulls as empty strings (group keys must not be null)."""
    if column is None:
        return pa.array([""] * length, pa.string())
    if not pa.types.is_string(column.type) and not pa.types.is_large_string(column.type):
        column = pc.cast(column, pa.string())
    return pc.fill_null(column, "")


def as_decimal(column: pa.Array | pa.ChunkedArray | None, length: int, what: str) -> pa.Array:
    """Read a cost or quantity column (text, decimal, float or integer) as exact decimals.

    Each value is rounded once, half to even, to the ledger's 10 places; nulls are zero. Text is
    read exactly as written, with any number of places or an exponent (`2.5893953072562468e-05`,
    as Python, pandas and Spark write floats). A value that is not a finite number, or that has
    more than 20 digits before the point, raises RowError naming its row and value.
    """
    if column is None:
        return pa.array([Decimal(0)] * length, COST_TYPE)
    if pa.types.is_dictionary(column.type):
        column = pc.cast(column, column.type.value_type)
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        return pc.fill_null(_text_decimal(column, what), Decimal(0))
    if not (pa.types.is_floating(kind) or pa.types.is_decimal(kind) or pa.types.is_integer(kind)):
        raise IngestError(f"column {what} holds {kind} values, not numbers")
    try:
        if pa.types.is_decimal(kind) and kind.scale > COST_TYPE.scale:  # Spark's decimal(38, 18)
            return pc.fill_null(_round_decimals(column), Decimal(0))
        return pc.fill_null(pc.cast(column, COST_TYPE), Decimal(0))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    # NaN, infinity, or too large somewhere (or a rounding that carries over): value by value
    cells = column.to_pylist()
    exact = [
        None if v is None else _exact(repr(v) if isinstance(v, float) else str(v), row, what)
        for row, v in enumerate(cells)
    ]
    return pc.fill_null(pa.array(exact, COST_TYPE), Decimal(0))


def _round_decimals(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Round decimals with more places than the ledger's, half to even; ArrowInvalid where a
    value would carry over into a digit its type has no room for (Arrow then wraps silently)."""
    kind = column.type
    top = pc.max(pc.abs(column)).as_py()
    room = _EXACT.subtract(Decimal(10) ** (kind.precision - kind.scale), _LEDGER_QUANTUM / 2)
    if top is not None and top >= room:
        raise pa.ArrowInvalid("rounding would carry over")
    rounded = pc.round(column, ndigits=COST_TYPE.scale, round_mode="half_to_even")
    return pc.cast(rounded, COST_TYPE)


# Text the vectorised cast reads exactly: at most 18 places, and 17 digits before the point so
# that rounding never carries over the 36 digits of _WIDE_TEXT.
_PLAIN_NUMBER = r"^[+-]?(?:[0-9]{1,17}(?:\.[0-9]{0,18})?|\.[0-9]{1,18})$"
_WIDE_TEXT = pa.decimal128(36, 18)
# What mlcost reads as a number: ASCII digits, one point, an optional exponent (no separators,
# no NaN or infinity; Python's Decimal alone would also take `1_000` and non-ASCII digits).
_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_LEDGER_QUANTUM = Decimal(1).scaleb(-COST_TYPE.scale)
_LEDGER_LIMIT = Decimal(10) ** (COST_TYPE.precision - COST_TYPE.scale)
_EXACT = Context(prec=COST_TYPE.precision + 10, rounding=ROUND_HALF_EVEN)


def _text_decimal(column: pa.Array, what: str) -> pa.Array:
    """Read decimal text exactly; the vectorised cast where it is exact, Decimal elsewhere."""
    text = pc.utf8_trim_whitespace(column)
    text = pc.if_else(pc.equal(text, ""), None, text)
    if _arrow_reads_exactly(text):
        try:
            return _round_wide(pc.cast(text, _WIDE_TEXT))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    # Some cells have more places, a large exponent, or are no number at all: read the cells
    # that are not plain by their text, each distinct one once (a real export had 414 such
    # cells among a million).
    plain = pc.fill_null(pc.match_substring_regex(text, _PLAIN_NUMBER), True)
    result = _round_wide(pc.cast(pc.if_else(plain, text, None), _WIDE_TEXT))
    other = pc.invert(plain)
    rows = pc.indices_nonzero(other)
    distinct = pc.dictionary_encode(pc.filter(text, other))
    exact = []
    for at, raw in enumerate(distinct.dictionary.to_pylist()):
        try:
            exact.append(_exact(raw, 0, what))
        except RowError as exc:  # name the first row that holds it
            row = rows[_first(pc.equal(distinct.indices, at)) or 0].as_py()
            raise RowError(row, what, exc.problem) from None
    values = pc.take(pa.array(exact, COST_TYPE), distinct.indices)
    return pc.replace_with_mask(result, other, values)


def _arrow_reads_exactly(text: pa.Array) -> bool:
    """Say whether Arrow's cast reads every cell exactly (or fails), and may be given them.

    Arrow drops digits beyond 38 without a word, and a huge negative exponent (`1e-999999999`)
    crashed it (pyarrow 26.0.1): text longer than 37 characters, or with an exponent of three
    digits or more, goes the exact way. Exponents are common: AWS writes `5.2E-9`.
    """
    longest = pc.max(pc.utf8_length(text)).as_py()
    if longest is None:
        return True
    if longest > 37:
        return False
    data = text.buffers()[2]
    # Any byte that is `e` or `E` (UTF-8 multibyte characters never hold ASCII bytes).
    if data is None or not (np.frombuffer(data, np.uint8) | 0x20 == ord("e")).any():
        return True
    return not pc.any(pc.match_substring_regex(text, r"[eE][+-]?[0-9]{3}")).as_py()


def _round_wide(wide: pa.Array) -> pa.Array:
    # Half to even at the ledger's 10 places, then narrowed: what is cut is zeros only.
    rounded = pc.round(wide, ndigits=COST_TYPE.scale, round_mode="half_to_even")
    return pc.cast(rounded, COST_TYPE, safe=False)


def _exact(raw: str, row: int, what: str) -> Decimal:
    """Return one number's text as a Decimal at the ledger's 10 places; RowError if it is none."""
    text = raw.strip()
    if not _NUMBER_RE.fullmatch(text):
        lowered = text.lower().lstrip("+-")
        why = " (NaN and infinity are no amount)" if lowered in _NOT_FINITE else ""
        raise RowError(row, what, f"{shown(raw)} is not a number{why}")
    value = Decimal(text)
    # copy_abs, not abs(): abs() would round to the context's 28 digits first
    if value.copy_abs() < _LEDGER_LIMIT:
        value = value.quantize(_LEDGER_QUANTUM, context=_EXACT)
        if value.copy_abs() < _LEDGER_LIMIT:
            return value
    raise RowError(
        row,
        what,
        f"{shown(raw)} is too large for the ledger "
        f"(at most {COST_TYPE.precision - COST_TYPE.scale} digits before the point)",
    )


_NOT_FINITE = frozenset({"nan", "snan", "inf", "infinity"})
# Where a date/time is written. FOCUS (Date/Time Format attribute): ISO 8601 extended format in
# UTC, `YYYY-MM-DDTHH:mm:ssZ`. Exporters around it: a space for the `T`, no zone (read as UTC), a
# `+00:00` offset or ` UTC`, fractions of a second to 7 places (Azure) or 9, a date alone.
_SPACE_SEPARATOR = r"^(\d{4}-\d{2}-\d{2}) (\d{2}:)"
_NAIVE_RE = r"^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)$"
_BEYOND_MICROSECONDS = r"(T\d{2}:\d{2}:\d{2}\.\d{6})\d+"
_DATE_FORMS = "ISO 8601 in UTC, such as 2024-01-01T00:00:00Z"


def _usual_time_text(text: pa.Array) -> pa.Array:
    """Rewrite a space separator, ` UTC`, no zone and a date alone into what Arrow casts."""
    text = pc.replace_substring_regex(text, _SPACE_SEPARATOR, r"\1T\2")
    text = pc.replace_substring_regex(text, r" ?UTC$", "Z")
    text = pc.replace_substring_regex(text, _NAIVE_RE, r"\1T\2Z")
    text = pc.replace_substring_regex(text, r"^(\d{4}-\d{2}-\d{2})$", r"\1T00:00:00Z")
    return pc.if_else(pc.equal(text, ""), None, text)


def as_timestamp(column: pa.Array | pa.ChunkedArray, what: str) -> pa.Array:
    """Convert timestamps (typed, or text in the forms FOCUS and exporters write) to UTC.

    Naive timestamps are read as UTC; empty cells stay null; fractions beyond microseconds are
    cut. A value that is no date raises RowError naming its row and value.
    """
    if pa.types.is_timestamp(column.type):
        return pc.cast(column, pa.timestamp("us", "UTC"), safe=False)  # ns: cut, not refused
    if pa.types.is_date(column.type):
        return pc.cast(pc.cast(column, pa.timestamp("s")), pa.timestamp("us", "UTC"))
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    raw = pc.cast(column, pa.string())
    text = pc.utf8_trim_whitespace(raw)
    try:  # the common forms, in as few passes as they need
        return pc.cast(_usual_time_text(text), pa.timestamp("us", "UTC"))
    except pa.ArrowInvalid:
        pass
    text = pc.replace_substring_regex(pc.utf8_upper(text), r" ([+-]\d{2}:?\d{2})$", r"\1")
    text = _usual_time_text(pc.replace_substring_regex(text, _BEYOND_MICROSECONDS, r"\1"))
    try:
        return pc.cast(text, pa.timestamp("us", "UTC"))
    except pa.ArrowInvalid:
        pass
    bad = []  # only a refusal comes here: find the first row whose value is no date
    for value in pc.unique(text).drop_null().to_pylist():
        try:
            pc.cast(pa.array([value]), pa.timestamp("us", "UTC"))
        except pa.ArrowInvalid:
            bad.append(value)
    row = _first(pc.is_in(text, value_set=pa.array(bad, pa.string())))
    if row is None:  # pragma: no cover - the cast failed, so some value is bad
        raise IngestError(f"column {what} has a bad date")
    raise RowError(row, what, f"bad date {shown(raw[row].as_py())}: expected {_DATE_FORMS}")


def as_date(column: pa.Array | pa.ChunkedArray, what: str) -> pa.Array:
    """Convert timestamps (typed, or text with or without `T`/`Z`/offset) to UTC dates."""
    if pa.types.is_timestamp(column.type):
        if column.type.tz is not None and column.type.tz.upper() not in ("UTC", "+00:00", "Z"):
            column = pc.cast(column, pa.timestamp(column.type.unit, "UTC"))
        result = pc.cast(column, pa.date32())
    elif pa.types.is_date(column.type):
        result = pc.cast(column, pa.date32())
    else:
        result = pc.cast(as_timestamp(column, what), pa.date32())
    row = _first(pc.is_null(result))
    if row is not None:
        raise RowError(row, what, f"is empty ({_DATE_FORMS} expected)")
    return result


def parse_tags_json(raw: str) -> dict[str, str]:
    """Parse a FOCUS/Azure Tags cell: JSON, or Azure's object without braces."""
    text = raw.strip()
    if not text or text in ("NULL", "null", "{}"):
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:
            value = json.loads("{" + text + "}")
        except json.JSONDecodeError:
            raise IngestError(f"Tags value is not JSON: {text[:80]!r}") from None
    if not isinstance(value, dict):
        raise IngestError(f"Tags value is not a JSON object: {text[:80]!r}")
    return normalize_tags(value)


def row_tags(row: dict[str, Any], wanted: set[str]) -> dict[str, str]:
    """Collect a grouped row's tags (tag columns or JSON), keeping only the wanted keys."""
    tags: dict[str, str] = {}
    raw_json = row.get(TAGS_JSON)
    if raw_json:
        tags.update(parse_tags_json(raw_json))
    for key, value in row.items():
        if key.startswith(TAG_PREFIX) and value:
            tags.setdefault(key[len(TAG_PREFIX) :], value)
    return {k: v for k, v in tags.items() if k in wanted}


def filter_tags_json(column: pa.Array, wanted: set[str], what: str = "Tags") -> pa.Array:
    """Reduce a Tags JSON column to the wanted keys so grouping does not explode.

    A wanted tag whose value holds a NUL byte (JSON's \\u0000) is refused by row.
    """
    cache: dict[str | None, str] = {}
    out = []
    for row, raw in enumerate(column.to_pylist()):
        if raw not in cache:
            tags = {k: v for k, v in (parse_tags_json(raw) if raw else {}).items() if k in wanted}
            if any("\x00" in f"{k}{v}" for k, v in tags.items()):
                raise RowError(
                    row,
                    what,
                    f"{NUL_PROBLEM}: {shown(tags)}",
                )
            cache[raw] = tags_json(tags, wanted)
        out.append(cache[raw])
    return pa.array(out, pa.string())


def tags_json(tags: Mapping[str, str], wanted: set[str]) -> str:
    """Return the ledger's tags cell: the wanted keys as sorted JSON, or "" when none."""
    kept = {k: v for k, v in tags.items() if k in wanted}
    return json.dumps(kept, sort_keys=True) if kept else ""


def tag_columns(names: Iterable[str], prefixes: tuple[str, ...]) -> dict[str, str]:
    """Map normalised tag keys to the columns that carry them (CUR styles)."""
    found: dict[str, str] = {}
    for name in names:
        for prefix in prefixes:
            if name.startswith(prefix):
                found.setdefault(normalize_tag_key(name[len(prefix) :]), name)
    return found


def month_start(day: dt.date) -> dt.date:
    """Return the first day of the day's month."""
    return day.replace(day=1)


def next_month(day: dt.date) -> dt.date:
    """Return the first day of the following month."""
    return (day.replace(day=28) + dt.timedelta(days=4)).replace(day=1)


def charges_table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Build canonical charges from plain rows, for a source that reads charges one by one.

    A row gives `day` and `billed` (a Decimal or its text) and any other KEY_COLUMNS it knows;
    the rest are blank, `billing_period` is the day's month, `effective` the billed cost,
    `quantity` zero, and `tags` ({key: value}) become tag columns (keys normalised).
    """
    rows = list(rows)
    tags = [{normalize_tag_key(k): str(v) for k, v in row.get("tags", {}).items()} for row in rows]
    columns: dict[str, pa.Array] = {
        "day": pa.array([row["day"] for row in rows], pa.date32()),
        "billing_period": pa.array(
            [row.get("billing_period") or month_start(row["day"]) for row in rows], pa.date32()
        ),
    }
    for name in KEY_COLUMNS[2:]:
        if name == "estimated":
            columns[name] = pa.array([bool(row.get(name)) for row in rows], pa.bool_())
        else:
            columns[name] = pa.array([str(row.get(name) or "") for row in rows], pa.string())
    for key in sorted({key for row_tags in tags for key in row_tags}):
        columns[TAG_PREFIX + key] = pa.array([t.get(key, "") for t in tags], pa.string())
    amounts = {
        "billed": [row["billed"] for row in rows],
        "effective": [row.get("effective", row["billed"]) for row in rows],
        "quantity": [row.get("quantity", 0) for row in rows],
    }
    for name, values in amounts.items():
        columns[name] = pa.array([Decimal(str(v)) for v in values], COST_TYPE)
    return pa.table(columns)


def source_data(
    grouped: GroupedCharges,
    scopes: Callable[[pa.Table], list[ReplaceScope]] | None = None,
    api_requests: int = 0,
) -> SourceData:
    """Return what a source read: the grouped charges, their totals and the scopes they replace.

    `scopes` maps the grouped charges to the scopes they replace; by default their billing periods.
    """
    charges = grouped.result()
    if grouped.spill is not None:
        if scopes is not None:
            raise ValueError("spilled charges replace their billing periods only")
        found = sorted(
            (
                ReplaceScope(provider, account, "billing_period", start, next_month(start))
                for provider, account, start in grouped.spill.scopes
            ),
            key=lambda s: (s.provider, s.billing_account, s.start),
        )
    else:
        found = (scopes or period_scopes)(charges)
    return SourceData(
        charges=charges,
        rows_read=grouped.rows,
        billed_total=grouped.billed,
        effective_total=grouped.effective,
        scopes=found,
        api_requests=api_requests,
        notes=grouped.notes(),
        spilled=grouped.spill,
    )


def period_scopes(charges: pa.Table) -> list[ReplaceScope]:
    """Return the (provider, account, billing period) scopes present in grouped charges."""
    if charges.num_rows == 0:
        return []
    keys = (
        charges.select(["provider", "billing_account", "billing_period"])
        .group_by(["provider", "billing_account", "billing_period"])
        .aggregate([])
    )
    scopes = []
    for row in keys.to_pylist():
        start = row["billing_period"]
        scopes.append(
            ReplaceScope(
                row["provider"], row["billing_account"], "billing_period", start, next_month(start)
            )
        )
    return sorted(scopes, key=lambda s: (s.provider, s.billing_account, s.start))
