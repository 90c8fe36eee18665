"""Write attributed spend to the ledger: one transaction, replace-by-scope, reconciled."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa
from sqlalchemy import and_, delete, insert, or_
from sqlalchemy.orm import Session

from bot.attribution import AttributionRules, Attributor, ChargeFacts
from bot.errors import IngestError
from bot.gpu import gpu_count
from bot.models import DailySpend, IngestionRun, utcnow
from bot.registry import load_attribution_rules
from bot.sources.base import TAG_PREFIX, TAGS_JSON, Progress, ReplaceScope, SpendSource, row_tags

_HOUR_UNITS = {"hrs", "hours", "hour", "hr", "h"}
_INSERT_CHUNK = 5_000


@dataclass
class IngestReport:
    """What one ingestion read and wrote, and the reconciliation."""

    run_id: int
    source: str
    location: str
    rows_read: int
    rows_written: int
    billed_total: Decimal
    effective_total: Decimal
    attributed_total: Decimal
    unallocated_total: Decimal
    replaced_rows: int
    api_requests: int
    scopes: list[ReplaceScope] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def reconciled(self) -> bool:
        """Return whether attributed + unallocated equals the billed total exactly."""
        return self.attributed_total + self.unallocated_total == self.billed_total

    def reconciliation_line(self) -> str:
        """Return the line printed after every ingestion."""
        status = "OK" if self.reconciled else "MISMATCH"
        return (
            f"reconciliation {status}: billed {self.billed_total:.2f} = attributed "
            f"{self.attributed_total:.2f} + unallocated {self.unallocated_total:.2f}"
        )


def ingest(
    source: SpendSource, *, session: Session, progress: Progress | None = None
) -> IngestReport:
    """Read a source, attribute it, replace its scopes in the ledger; the caller commits."""
    rules = load_attribution_rules(session=session)
    data = source.read(rules.tag_keys_used(), progress)
    rows = attribute_charges(data.charges, rules)
    billed = sum((r["billed_cost"] for r in rows), Decimal(0))
    if billed != data.billed_total:
        raise IngestError(
            f"{source.location}: internal reconciliation failed "
            f"(read {data.billed_total}, attributed {billed}); nothing was written"
        )
    attributed = sum((r["billed_cost"] for r in rows if r["model"]), Decimal(0))
    run = IngestionRun(
        source=source.kind,
        location=source.location,
        rows_read=data.rows_read,
        rows_written=len(rows),
        api_requests=data.api_requests,
        billed_total=data.billed_total,
        effective_total=data.effective_total,
        attributed_total=attributed,
        unallocated_total=billed - attributed,
        scopes=[s.as_dict() for s in data.scopes],
    )
    session.add(run)
    replaced = replace_scopes(data.scopes, session=session)
    session.flush()
    for row in rows:
        row["run_id"] = run.id
    for start in range(0, len(rows), _INSERT_CHUNK):
        session.execute(insert(DailySpend), rows[start : start + _INSERT_CHUNK])
    run.replaced_rows = replaced
    run.status = "succeeded"
    run.finished_at = utcnow()
    session.flush()
    return IngestReport(
        run_id=run.id, source=source.kind, location=source.location,
        rows_read=data.rows_read, rows_written=len(rows), billed_total=data.billed_total,
        effective_total=data.effective_total, attributed_total=attributed,
        unallocated_total=billed - attributed, replaced_rows=replaced,
        api_requests=data.api_requests, scopes=data.scopes, notes=data.notes,
    )  # fmt: skip


def replace_scopes(scopes: Iterable[ReplaceScope], *, session: Session) -> int:
    """Delete the ledger rows that these scopes cover; return how many."""
    conditions = []
    for scope in scopes:
        column = DailySpend.billing_period if scope.column == "billing_period" else DailySpend.day
        conditions.append(and_(
            DailySpend.provider == scope.provider,
            DailySpend.billing_account == scope.billing_account,
            column >= scope.start,
            column < scope.end,
        ))  # fmt: skip
    if not conditions:
        return 0
    result = session.execute(delete(DailySpend).where(or_(*conditions)))
    return int(getattr(result, "rowcount", 0) or 0)


def attribute_charges(charges: pa.Table, rules: AttributionRules) -> list[dict[str, Any]]:
    """Attribute grouped charges and fold them into ledger rows."""
    attributor = Attributor(rules)
    wanted = rules.tag_keys_used()
    tag_cols = [c for c in charges.column_names if c.startswith(TAG_PREFIX) or c == TAGS_JSON]
    folded: dict[tuple[Any, ...], dict[str, Any]] = {}
    cache: dict[tuple[Any, ...], Any] = {}
    for row in charges.to_pylist():
        tags_key = tuple(row[c] for c in tag_cols)
        facts_key = (
            tags_key, row["service"], row["service_category"], row["usage_type"],
            row["resource_id"], row["instance_type"], row["billing_account"], row["sub_account"],
        )  # fmt: skip
        result = cache.get(facts_key)
        if result is None:
            facts = ChargeFacts(
                service=row["service"],
                tags=row_tags(row, wanted),
                service_category=row["service_category"] or None,
                usage_type=row["usage_type"] or None,
                resource_id=row["resource_id"] or None,
                instance_type=row["instance_type"] or None,
                billing_account=row["billing_account"] or None,
                sub_account=row["sub_account"] or None,
            )
            result = cache[facts_key] = attributor(facts)
        key = (
            row["day"], row["billing_period"], row["provider"], row["billing_account"],
            row["sub_account"], row["service"], row["service_category"], row["usage_type"],
            row["region"], row["resource_id"], row["instance_type"], row["charge_category"],
            row["estimated"], result.model, result.stage, result.team, result.model_tag_value,
            result.rule,
        )  # fmt: skip
        quantity = Decimal(row["quantity"])
        gpus = gpu_count(row["instance_type"]) if row["unit"].lower() in _HOUR_UNITS else 0
        entry = folded.get(key)
        if entry is None:
            folded[key] = {
                "day": row["day"], "billing_period": row["billing_period"],
                "provider": row["provider"], "billing_account": row["billing_account"],
                "sub_account": row["sub_account"] or None, "service": row["service"],
                "service_category": row["service_category"] or None,
                "usage_type": row["usage_type"] or None, "region": row["region"] or None,
                "resource_id": row["resource_id"] or None,
                "instance_type": row["instance_type"] or None,
                "charge_category": row["charge_category"] or "Usage",
                "estimated": bool(row["estimated"]), "model": result.model,
                "stage": result.stage, "team": result.team,
                "model_tag_value": result.model_tag_value, "attribution": result.rule,
                "billed_cost": Decimal(row["billed"]), "effective_cost": Decimal(row["effective"]),
                "usage_quantity": quantity, "gpu_hours": quantity * gpus,
            }  # fmt: skip
        else:
            entry["billed_cost"] += Decimal(row["billed"])
            entry["effective_cost"] += Decimal(row["effective"])
            entry["usage_quantity"] += quantity
            entry["gpu_hours"] += quantity * gpus
    return list(folded.values())
