"""Prices for resources the ledger has no line items for: a bundled on-demand table.

`data/gpu_prices.csv` (see data/README.md for the source and date) holds one row per priced
thing: `kind,name,gpus,gpu_model,price,unit,source,as_of`, where kind is `ec2` or `sagemaker`
(price per hour, us-east-1 on-demand, Linux), `ebs` (per GB-month by volume type),
`ebs-snapshot` or `s3` (per GB-month by storage class). An operator's own file in the same format
(MLCOST_PRICE_TABLE_FILE) replaces it. Money is Decimal throughout.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from importlib import resources
from pathlib import Path

from bot.errors import UsageError

HOURS_PER_MONTH = Decimal(730)  # AWS's own convention for monthly estimates
GIB = Decimal(1024**3)
CENT = Decimal("0.01")
COLUMNS = ("kind", "name", "gpus", "gpu_model", "price", "unit", "source", "as_of")
KINDS = {"ec2": "hour", "sagemaker": "hour", "ebs": "GB-month", "ebs-snapshot": "GB-month"}
KINDS["s3"] = "GB-month"

# Where to look for "a smaller GPU" when no smaller size of the same family fits.
SMALLER_GPU_FAMILIES = {
    "p5": ("p4d",),
    "p5e": ("p5", "p4d"),
    "p4de": ("p4d",),
    "p4d": ("g6e",),
    "p3": ("g6", "g5"),
    "g6e": ("g6",),
    "g5": ("g6", "g4dn"),
    "g6": ("g4dn",),
}


@dataclass(frozen=True)
class PriceRow:
    """One row of the table."""

    kind: str
    name: str
    gpus: int
    gpu_model: str
    price: Decimal
    unit: str
    source: str
    as_of: str

    @property
    def family(self) -> str:
        """Return the instance family (`g5` of `g5.xlarge`, `g4dn` of `ml.g4dn.xlarge`)."""
        return self.name.removeprefix("ml.").split(".", 1)[0]

    @property
    def label(self) -> str:
        """Return the price source as findings state it."""
        return f"price table ({self.source}, {self.as_of})"


class PriceTable:
    """Look prices up by kind and name."""

    def __init__(self, rows: list[PriceRow]) -> None:
        self.rows = {(r.kind, r.name.lower()): r for r in rows}

    def get(self, kind: str, name: str | None) -> PriceRow | None:
        """Return the row of a kind and name (case-insensitive), or None."""
        if not name:
            return None
        return self.rows.get((kind, name.lower()))

    def hourly(self, kind: str, name: str | None) -> PriceRow | None:
        """Return the row of an hourly-priced type (ec2, sagemaker), or None."""
        row = self.get(kind, name)
        return row if row is not None and row.unit == "hour" else None

    def smaller_gpu(self, kind: str, name: str, needed_gpus: int) -> PriceRow | None:
        """Return the cheapest type with at least `needed_gpus` GPUs and a lower price.

        Same family first (fewer GPUs), then the families of SMALLER_GPU_FAMILIES.
        """
        current = self.get(kind, name)
        if current is None or current.gpus == 0:
            return None
        cheaper = [
            r
            for r in self.rows.values()
            if r.kind == kind and r.gpus >= needed_gpus and r.price < current.price
        ]
        same = [r for r in cheaper if r.family == current.family and r.gpus < current.gpus]
        if same:
            return min(same, key=lambda r: (r.price, r.name))
        others = [r for r in cheaper if r.family in SMALLER_GPU_FAMILIES.get(current.family, ())]
        return min(others, key=lambda r: (r.price, r.name)) if others else None


def monthly_from_hourly(hourly: Decimal, count: int = 1) -> Decimal:
    """Return a month (730 hours) of `count` units at an hourly price, to the cent."""
    return (hourly * count * HOURS_PER_MONTH).quantize(CENT)


def monthly_from_gb(price_per_gb_month: Decimal, size_bytes: int | Decimal) -> Decimal:
    """Return a month of `size_bytes` at a GB-month price (AWS bills storage per GiB)."""
    return (price_per_gb_month * Decimal(size_bytes) / GIB).quantize(CENT)


def gpus_needed(gpus: int, utilisation_pct: Decimal, target_pct: Decimal = Decimal(60)) -> int:
    """Return how many GPUs carry the load at `target_pct` utilisation (at least one)."""
    return max(1, math.ceil(gpus * utilisation_pct / target_pct))


def load_price_table(path: Path | None = None) -> PriceTable:
    """Read the operator's table, or the bundled one; a bad file is a UsageError naming the row."""
    if path is None:
        text = resources.files("bot.waste").joinpath("data/gpu_prices.csv").read_text("utf-8")
        where = "bundled gpu_prices.csv"
    else:
        try:
            text = Path(path).read_text("utf-8")
        except OSError as exc:
            raise UsageError(
                f"MLCOST_PRICE_TABLE_FILE {path}: cannot read it ({exc.strerror})"
            ) from None
        where = str(path)
    return PriceTable(parse_price_table(text, where))


def parse_price_table(text: str, where: str = "price table") -> list[PriceRow]:
    """Parse the CSV; refuse unknown kinds, units that do not fit the kind, bad numbers."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise UsageError(f"{where}: missing column(s) {', '.join(missing)}")
    rows: list[PriceRow] = []
    for line, raw in enumerate(reader, start=2):
        kind = (raw["kind"] or "").strip().lower()
        if kind not in KINDS:
            raise UsageError(f"{where} line {line}: kind {kind!r} is not one of {', '.join(KINDS)}")
        unit = (raw["unit"] or "").strip()
        if unit != KINDS[kind]:
            raise UsageError(
                f"{where} line {line}: a {kind} price is per {KINDS[kind]}, not {unit!r}"
            )
        try:
            price = Decimal((raw["price"] or "").strip())
            gpus = int((raw["gpus"] or "0").strip() or 0)
        except (InvalidOperation, ValueError):
            raise UsageError(f"{where} line {line}: price or gpus is not a number") from None
        if not price.is_finite() or price < 0 or gpus < 0:
            raise UsageError(f"{where} line {line}: price and gpus must be zero or more")
        name = (raw["name"] or "").strip()
        if not name:
            raise UsageError(f"{where} line {line}: no name")
        rows.append(
            PriceRow(
                kind=kind,
                name=name,
                gpus=gpus,
                gpu_model=(raw["gpu_model"] or "").strip(),
                price=price,
                unit=unit,
                source=(raw["source"] or "").strip() or "operator's table",
                as_of=(raw["as_of"] or "").strip() or "undated",
            )
        )
    return rows
