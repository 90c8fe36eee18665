"""Progress bars on stderr for long work: drawn on a terminal, silent otherwise.

    from bot.cli import progress

    with progress.task("ingest cur", total=len(files), unit="files") as bar:
        for path in files:
            for rows in read_batches(path):
                bar.advance(rows=rows)  # rows read, for the count and the rate
            bar.advance(1)  # one file done

`task(label, total=None, unit="")` yields a `Bar`; `bar.advance(done=0, rows=0)` counts units
done and rows read, and `bar.set_total(total, unit)` sets the total once it is known (ingestion
learns it after listing the files). A bar is one line, redrawn in place with a carriage return
at most every 0.1 s:

    ingest cur  [######..........]  3/8 files  1,204,113 rows  402,371 rows/s  0:03

When the block ends (normally or by an exception) the bar draws its final state and ends the
line, so what is printed next starts on a line of its own. Without a total it shows the count
done, rows and time only (a step of `mlcost poll`).

Nothing is written when stderr is not a terminal (pipes, files, CI logs), or after
`set_quiet(True)` (`mlcost --quiet`); the bar still counts, so code never checks. A `Bar` is the
`bot.ingest.sources.base.Progress` the domain reports to: the domain never imports this module.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

WIDTH = 16  # characters of the bar itself
INTERVAL = 0.1  # seconds between redraws

_quiet = False


def set_quiet(quiet: bool) -> None:
    """Silence every bar from now on (`mlcost --quiet`), or let them draw again."""
    global _quiet
    _quiet = quiet


class Bar:
    """One task's progress: units done of a total, rows read, their rate, time taken."""

    def __init__(
        self,
        label: str,
        total: int | None = None,
        unit: str = "",
        *,
        stream: TextIO,
        enabled: bool,
        interval: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.done = 0
        self.rows = 0
        self.enabled = enabled
        self._stream = stream
        self._interval = interval
        self._clock = clock
        self._started = clock()
        self._drawn_at: float | None = None
        self._drawn_width = 0

    def set_total(self, total: int | None, unit: str | None = None) -> None:
        """Set how many units the task has (None: unknown) and what they are."""
        self.total = total
        if unit is not None:
            self.unit = unit
        self._draw()

    def advance(self, done: int = 0, rows: int = 0) -> None:
        """Count units done and rows read; redraw if the last drawing is old enough."""
        self.done += done
        self.rows += rows
        self._draw()

    def text(self, columns: int = 200) -> str:
        """Return the bar's line as it stands, at most `columns` wide (the bar goes first)."""
        elapsed = max(self._clock() - self._started, 0.0)
        unit = f" {self.unit}" if self.unit else ""
        parts = [self.label]
        if self.total:
            filled = min(WIDTH, WIDTH * self.done // self.total)
            parts.append(f"[{'#' * filled}{'.' * (WIDTH - filled)}]")
            parts.append(f"{self.done:,}/{self.total:,}{unit}")
        elif self.done:
            parts.append(f"{self.done:,}{unit}")
        if self.rows:
            parts.append(f"{self.rows:,} rows")
            if elapsed > 0:
                parts.append(f"{self.rows / elapsed:,.0f} rows/s")
        minutes, seconds = divmod(int(elapsed), 60)
        parts.append(f"{minutes}:{seconds:02d}")
        line = "  ".join(parts)
        if len(line) > columns and self.total:
            line = "  ".join(p for i, p in enumerate(parts) if i != 1)  # the counts matter more
        return line[:columns]

    def finish(self) -> None:
        """Draw the final state and end the line."""
        if self.enabled:
            self._draw(force=True)
            self._stream.write("\n")
            self._stream.flush()

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = self._clock()
        if not force and self._drawn_at is not None and now - self._drawn_at < self._interval:
            return
        self._drawn_at = now
        # one character short of the width: a full line would wrap and break the redraw
        line = self.text(shutil.get_terminal_size((80, 24)).columns - 1)
        self._stream.write("\r" + line.ljust(self._drawn_width))
        self._stream.flush()
        self._drawn_width = len(line)


@contextmanager
def task(
    label: str,
    total: int | None = None,
    unit: str = "",
    *,
    stream: TextIO | None = None,
    enabled: bool | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[Bar]:
    """Show a bar for the block's work on stderr (or `stream`) if it is a terminal and not quiet.

    `enabled` overrides the terminal and quiet checks (tests).
    """
    out = stream if stream is not None else sys.stderr
    if enabled is None:
        enabled = not _quiet and _is_terminal(out)
    bar = Bar(label, total, unit, stream=out, enabled=enabled, clock=clock)
    bar.advance()  # show the task at once: slow work is the reason for a bar
    try:
        yield bar
    finally:
        bar.finish()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        return False
