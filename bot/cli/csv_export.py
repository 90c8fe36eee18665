"""The one way mlcost writes CSV for people: cells a spreadsheet cannot run as formulas.

Billing text (tag values, resource ids, service and team names) may start with `=`, `+`, `-`,
`@`, a tab or a carriage return, which Excel, LibreOffice and Google Sheets read as a formula
(OWASP "CSV Injection"). Such a text cell gets a leading `'`; numbers (Decimal, int) are
written as they are, so a credit of -12.50 stays a number.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> object:
    """Return a cell as written: text that a spreadsheet would run gets a leading `'`."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_text(rows: Iterable[Sequence[object]], *, lineterminator: str = "\r\n") -> str:
    """Render rows as CSV, every text cell neutralised (safe_cell)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=lineterminator)
    for row in rows:
        writer.writerow([safe_cell(cell) for cell in row])
    return out.getvalue()
