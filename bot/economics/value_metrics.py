"""Value metrics per model and day: record them, read them from CSV, and sum them per period.

A metric is any named unit a model produces (predictions, decisions, ...), with optional revenue.
Each row is keyed by (model, day, metric, source); recording the same key again replaces it, so
re-ingesting a file or re-pulling CloudWatch never doubles value. When several sources report the
same model, day and metric, the most direct one counts: a person's entry in Slack or the CLI, then
a CSV file, then CloudWatch.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row, select

from bot.db.engine import dialect_insert
from bot.db.reading import Reader
from bot.db.tables import models, utcnow, value_metrics
from bot.errors import IngestError, UsageError
from bot.periods import Period

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

METRIC_RE = re.compile(r"^[a-z][a-z0-9_.-]{0,59}$")
SOURCE_PRECEDENCE = ("slack", "cli", "csv", "cloudwatch")
PRIMARY_METRICS = ("predictions", "invocations", "decisions")
CSV_COLUMNS = ("date", "model", "metric", "units")
MAX_REPORTED_ERRORS = 5


@dataclass(frozen=True)
class ValueRow:
    model: str
    day: dt.date
    metric: str
    units: Decimal
    revenue: Decimal | None = None


def parse_units(text: str) -> Decimal:
    """Parse `1234`, `1,234`, `12k` or `1.5m` into a non-negative number of units."""
    cleaned = text.strip().replace(",", "").replace("_", "").lower()
    factor = Decimal(1)
    if cleaned[-1:] in ("k", "m"):
        factor = Decimal(1000) if cleaned[-1] == "k" else Decimal(1_000_000)
        cleaned = cleaned[:-1]
    try:
        value = Decimal(cleaned) * factor
    except InvalidOperation:
        raise UsageError(f"{text!r} is not a count; use e.g. 125000, 125k or 1.2m") from None
    if not value.is_finite() or value < 0 or value >= Decimal("1e15"):
        raise UsageError(f"{text!r} is not a sensible count")
    return value


def parse_revenue(text: str) -> Decimal:
    """Parse a revenue amount such as `1250.50` or `$1,250.50`."""
    cleaned = text.strip().replace(",", "").replace("$", "")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        raise UsageError(f"{text!r} is not an amount of money") from None
    if not value.is_finite() or abs(value) >= Decimal("1e12"):
        raise UsageError(f"{text!r} is not a sensible amount")
    return value


def check_metric(name: str) -> str:
    """Return the metric name lower-cased, or raise UsageError."""
    metric = name.strip().lower()
    if not METRIC_RE.match(metric):
        raise UsageError(
            f"{name!r} is not a metric name; use letters, digits, '_', '-' or '.', e.g. predictions"
        )
    return metric


def record_values(
    rows: Iterable[ValueRow], *, session: Session, source: str, recorded_by: str | None
) -> int:
    """Insert or replace value rows for one source; return how many were written."""
    insert_fn = dialect_insert(session)
    count = 0
    now = utcnow()
    for row in rows:
        statement = insert_fn(value_metrics).values(
            model_name=row.model,
            day=row.day,
            metric=row.metric,
            units=row.units,
            revenue=row.revenue,
            source=source,
            recorded_by=recorded_by,
            recorded_at=now,
        )
        statement = statement.on_conflict_do_update(
            index_elements=["model_name", "day", "metric", "source"],
            set_={
                "units": statement.excluded.units,
                "revenue": statement.excluded.revenue,
                "recorded_by": statement.excluded.recorded_by,
                "recorded_at": statement.excluded.recorded_at,
            },
        )
        session.execute(statement)
        count += 1
    session.flush()
    return count


def read_value_csv(path: Path, known_models: set[str]) -> list[ValueRow]:
    """Read and validate a whole value CSV; raise IngestError naming each bad line and field."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise IngestError(f"{path}: cannot read: {exc}") from None
    return parse_value_csv(text, known_models, str(path))


def parse_value_csv(text: str, known_models: set[str], name: str = "values.csv") -> list[ValueRow]:
    """Parse CSV text with columns date,model,metric,units[,revenue]; all rows or none."""
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip().lower() for h in (reader.fieldnames or [])]
    missing = [c for c in CSV_COLUMNS if c not in header]
    if missing:
        raise IngestError(
            f"{name}:1: missing column(s) {', '.join(missing)}; expected "
            "date,model,metric,units[,revenue]"
        )
    reader.fieldnames = header
    errors: list[str] = []
    rows: list[ValueRow] = []
    seen: dict[tuple[str, dt.date, str], int] = {}
    for line, raw in enumerate(reader, start=2):
        problem, row = _parse_csv_row(raw, known_models)
        if problem is None and row is not None:
            key = (row.model, row.day, row.metric)
            if key in seen:
                problem = f"model/date/metric: duplicate of line {seen[key]}"
            else:
                seen[key] = line
                rows.append(row)
        if problem is not None:
            errors.append(f"{name}:{line}: {problem}")
    if errors:
        more = len(errors) - MAX_REPORTED_ERRORS
        suffix = f" (and {more} more)" if more > 0 else ""
        raise IngestError("; ".join(errors[:MAX_REPORTED_ERRORS]) + suffix)
    if not rows:
        raise IngestError(f"{name}: no rows")
    return rows


def _parse_csv_row(
    raw: dict[str | None, str | None], known_models: set[str]
) -> tuple[str | None, ValueRow | None]:
    if raw.get(None):
        return "too many fields", None
    cell = {k: (v or "").strip() for k, v in raw.items() if k is not None}
    try:
        day = dt.date.fromisoformat(cell.get("date", ""))
    except ValueError:
        return f"date: {cell.get('date')!r} is not a date (YYYY-MM-DD)", None
    model = cell.get("model", "").lower()
    if model not in known_models:
        return f"model: unknown model {cell.get('model')!r}", None
    try:
        metric = check_metric(cell.get("metric", ""))
        units = parse_units(cell.get("units", ""))
    except UsageError as exc:
        field_name = "metric" if "metric" in str(exc) else "units"
        return f"{field_name}: {exc}", None
    revenue = None
    if cell.get("revenue"):
        try:
            revenue = parse_revenue(cell["revenue"])
        except UsageError as exc:
            return f"revenue: {exc}", None
    return None, ValueRow(model, day, metric, units, revenue)


def known_model_names(session: Reader) -> set[str]:
    """Return every registered model name."""
    return set(session.scalars(select(models.c.name)))


@dataclass
class ValueTotal:
    """One model's value over a period for one metric."""

    metric: str
    units: Decimal = Decimal(0)
    revenue: Decimal | None = None
    days: int = 0


def daily_values(
    *, session: Reader, period: Period, models: Iterable[str] | None = None
) -> dict[tuple[str, dt.date, str], Row[Any]]:
    """Return the value recorded per (model, day, metric) in the period, one source each.

    When several sources recorded the same day (Slack, CLI, CSV, CloudWatch), the first in
    SOURCE_PRECEDENCE wins, so nothing is counted twice.
    """
    query = select(value_metrics).where(
        value_metrics.c.day >= period.start, value_metrics.c.day < period.end
    )
    if models is not None:
        query = query.where(value_metrics.c.model_name.in_(list(models)))
    chosen: dict[tuple[str, dt.date, str], Row[Any]] = {}
    for row in session.execute(query):
        key = (row.model_name, row.day, row.metric)
        current = chosen.get(key)
        if current is None or _rank(row.source) < _rank(current.source):
            chosen[key] = row
    return chosen


def value_totals(
    *, session: Reader, period: Period, models: Iterable[str] | None = None
) -> dict[str, dict[str, ValueTotal]]:
    """Return {model: {metric: total}} over the period, one source per model, day and metric."""
    totals: dict[str, dict[str, ValueTotal]] = defaultdict(dict)
    for (model, _day, metric), row in daily_values(
        session=session, period=period, models=models
    ).items():
        total = totals[model].setdefault(metric, ValueTotal(metric))
        total.units += row.units
        total.days += 1
        if row.revenue is not None:
            total.revenue = (total.revenue or Decimal(0)) + row.revenue
    return dict(totals)


def primary_metric(metrics: Iterable[str]) -> str | None:
    """Pick the metric unit cost is measured in: predictions, invocations, decisions, else A-Z."""
    names = sorted(set(metrics))
    for preferred in PRIMARY_METRICS:
        if preferred in names:
            return preferred
    return names[0] if names else None


def _rank(source: str) -> tuple[int, str]:
    order = (
        SOURCE_PRECEDENCE.index(source) if source in SOURCE_PRECEDENCE else len(SOURCE_PRECEDENCE)
    )
    return order, source
