"""Progress on stderr for long work, shown only on a terminal."""

from __future__ import annotations

import sys


class ProgressLine:
    """A one-line row counter on stderr, shown only on a terminal."""

    def __init__(self, label: str, enabled: bool | None = None) -> None:
        self.label = label
        self.rows = 0
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    def __call__(self, rows: int) -> None:
        self.rows += rows
        if self.enabled:
            print(f"\r{self.label}: {self.rows:,} rows read", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        """End the progress line."""
        if self.enabled and self.rows:
            print(file=sys.stderr)
