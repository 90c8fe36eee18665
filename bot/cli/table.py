"""Plain-text tables for the command line: aligned columns, no trailing spaces.

    from bot.cli.table import Column, Table

    table = Table([Column("team"), Column("total", right=True)], rows)
    print("\n".join(table.lines(rule=True)))

Each column is as wide as its widest cell (header included), or `cut` characters at most (longer
cells end in `…`). Columns are two spaces apart; a right-aligned column's header is right-aligned
with its cells, so numbers line up under their titles. Light to import (no third-party
package): `rich` would cost `mlcost --help` about a third of its time (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

GAP = "  "


@dataclass(frozen=True)
class Column:
    """One column: its title, alignment and the widest it may grow (None: no limit)."""

    title: str
    right: bool = False
    cut: int | None = None


class Table:
    """Rows of text cells laid out under their columns' titles."""

    def __init__(self, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
        self.columns = list(columns)
        self.rows = [list(row) for row in rows]
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"a row has {len(row)} cells for {len(self.columns)} columns")
        self.widths = []
        for i, column in enumerate(self.columns):
            width = max([len(column.title), *(len(row[i]) for row in self.rows)])
            self.widths.append(width if column.cut is None else min(width, column.cut))

    def line(self, cells: Sequence[str]) -> str:
        """Lay out one row (any cells, e.g. a totals row) in the table's columns."""
        out = []
        for cell, column, width in zip(cells, self.columns, self.widths, strict=True):
            text = _cut(cell, width)
            out.append(text.rjust(width) if column.right else text.ljust(width))
        return GAP.join(out).rstrip()

    def header(self) -> str:
        """Return the titles' line."""
        return self.line([c.title for c in self.columns])

    def rule(self) -> str:
        """Return a line of dashes under each column."""
        return GAP.join("-" * w for w in self.widths)

    def lines(self, *, rule: bool = False) -> list[str]:
        """Return the header, a rule under it if asked, and every row."""
        return [self.header(), *([self.rule()] if rule else []), *map(self.line, self.rows)]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
