"""The billing corpus: its manifest, independent sums of each file, and the docs' formats table.

Run `python -m tests.support.corpus` to rewrite the table in docs/ingestion.md from the manifest.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import yaml

DATA = Path(__file__).resolve().parents[1] / "data"
MANIFEST = DATA / "corpus" / "MANIFEST.yaml"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "ingestion.md"
TABLE_START = "<!-- corpus table: generated from tests/data/corpus/MANIFEST.yaml -->"
TABLE_END = "<!-- end of corpus table -->"


@dataclass(frozen=True)
class Expectation:
    """What an ingestion of a corpus file does: read, refused with a hint, or not recognised."""

    status: str
    fragment: str = ""

    @classmethod
    def parse(cls, value: object) -> Expectation:
        """Parse `read`, `[refused, "<words>"]` or `[not recognised, "<words>"]`."""
        if value == "read":
            return cls("read")
        if (
            isinstance(value, list)
            and len(value) == 2
            and value[0] in ("refused", "not recognised")
            and isinstance(value[1], str)
            and value[1]
        ):
            return cls(value[0], value[1])
        raise ValueError(f"bad corpus expectation: {value!r}")


@dataclass(frozen=True)
class CorpusFile:
    """One manifest entry."""

    file: str
    format: str
    source: str
    command: str
    expect: Expectation
    after: Expectation | None
    sum: dict[str, Any]

    @property
    def path(self) -> Path:
        """Return the file's path."""
        return DATA / self.file

    @property
    def test_id(self) -> str:
        """Return a short id for pytest: the file name and the command."""
        return f"{Path(self.file).name}:{self.command}"

    def argv(self) -> list[str]:
        """Return the `mlcost ingest` arguments that read this file."""
        if self.command == "cost-explorer":
            return ["ingest", "cost-explorer", "--from-file", str(self.path)]
        return ["ingest", self.command, str(self.path)]


def load_manifest() -> list[CorpusFile]:
    """Read MANIFEST.yaml."""
    entries = yaml.safe_load(MANIFEST.read_text())["files"]
    return [
        CorpusFile(
            file=entry["file"],
            format=entry["format"],
            source=entry["source"],
            command=entry["command"],
            expect=Expectation.parse(entry["expect"]),
            after=Expectation.parse(entry["after"]) if entry.get("after") else None,
            sum=entry.get("sum") or {},
        )
        for entry in entries
    ]


def independent_billed_totals(entry: CorpusFile) -> dict[str, Decimal]:
    """Add up the file's billed cost per currency without mlcost: csv/pyarrow/json + Decimal."""
    spec = entry.sum
    if "json" in spec:
        return _json_totals(spec["json"], entry.path)
    totals: dict[str, Decimal] = defaultdict(Decimal)
    nulls = {"", *spec.get("nulls", [])}
    for cost, currency in _cost_rows(entry.path, spec["cost"], spec.get("currency")):
        if cost is None or cost.strip() in nulls:
            continue
        totals[spec.get("currency_is") or currency or ""] += Decimal(cost.strip())
    return dict(totals)


def _cost_rows(path: Path, cost: str, currency: str | None) -> list[tuple[str | None, str | None]]:
    if path.suffix == ".parquet":
        columns = [cost] if currency is None else [cost, currency]
        table = pq.read_table(path, columns=columns).to_pydict()
        costs = [None if v is None else repr(v) for v in table[cost]]
        units = table[currency] if currency else [None] * len(costs)
        return list(zip(costs, units, strict=True))
    with path.open(newline="", encoding="utf-8-sig") as f:
        return [
            (row.get(cost), row.get(currency) if currency else None) for row in csv.DictReader(f)
        ]


def _json_totals(kind: str, path: Path) -> dict[str, Decimal]:
    answer = json.loads(path.read_text(), parse_float=Decimal)
    totals: dict[str, Decimal] = defaultdict(Decimal)
    if kind == "cost-explorer":
        for result in answer["ResultsByTime"]:
            groups = result.get("Groups") or [{"Metrics": result.get("Total") or {}}]
            for group in groups:
                metrics = group["Metrics"]
                name = next(
                    n for n in ("UnblendedCost", "BlendedCost", "NetUnblendedCost") if n in metrics
                )
                totals[metrics[name]["Unit"]] += Decimal(metrics[name]["Amount"])
    elif kind == "opencost-allocation":
        for allocation_set in answer["data"]:
            for allocation in allocation_set.values():
                totals["USD"] += Decimal(allocation["totalCost"])
    elif kind == "opencost-cloudcost":
        for cost_set in answer["data"]["sets"]:
            for item in cost_set["cloudCosts"].values():
                name = next(n for n in ("invoicedCost", "netCost", "listCost") if n in item)
                totals["USD"] += Decimal(item[name]["cost"])
    else:
        raise ValueError(f"unknown corpus sum: {kind}")
    return dict(totals)


def _status_cell(expectation: Expectation) -> str:
    if expectation.status == "read":
        return "read, reconciled to the cent"
    return f"{expectation.status}: “{expectation.fragment}”"


def render_table(entries: list[CorpusFile]) -> str:
    """Return the markdown formats table (one row per corpus file and command)."""
    lines = [
        TABLE_START,
        "| Format | Sample: source, file in `tests/data/` | Command | What mlcost does |",
        "|---|---|---|---|",
    ]
    for entry in entries:
        lines.append(
            f"| {entry.format} | {entry.source}: `{entry.file}` | `mlcost ingest {entry.command}` "
            f"| {_status_cell(entry.expect)} |"
        )
    lines.append(TABLE_END)
    return "\n".join(lines)


def table_in_docs() -> str:
    """Return the formats table as docs/ingestion.md has it (markers included), or ""."""
    text = DOCS.read_text()
    start, end = text.find(TABLE_START), text.find(TABLE_END)
    return text[start : end + len(TABLE_END)] if 0 <= start < end else ""


def write_table_to_docs() -> None:
    """Replace the table in docs/ingestion.md with one rendered from the manifest."""
    text, current = DOCS.read_text(), table_in_docs()
    if not current:
        raise SystemExit(f"{DOCS}: no corpus table markers")
    DOCS.write_text(text.replace(current, render_table(load_manifest())))


if __name__ == "__main__":
    write_table_to_docs()
