"""Grouped charges beyond what memory should hold: partial sums on disk, bucketed by day.

A month of CUR holds about one group per (day, resource, tags, ...): 1.5 million at 50,000
resources, whose rows arrive in any order. Held in memory, those groups are what a large ingestion
grows with. Past a number of groups, the partial sums go to Arrow IPC files in a temporary folder,
each day to its bucket (groups never span days); the buckets are then summed one at a time, so
memory is bound by the largest bucket's groups, not by the month's.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Day buckets: consecutive days fall in different buckets, so a month's days are summed one at a
# time; a bill of several years shares each bucket among a few days.
BUCKETS = 64
_SCOPE_KEYS = ("provider", "billing_account", "billing_period")
_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")


class ChargeSpill:
    """Partial sums of grouped charges, written to disk by day bucket and summed back by bucket."""

    def __init__(self, merge: Callable[[list[pa.Table]], pa.Table], merge_rows: int) -> None:
        """`merge` groups partial sums again as one table; a bucket read back is merged whenever
        more than `merge_rows` rows of it are held."""
        self.merge = merge
        self.merge_rows = merge_rows
        self._folder = tempfile.TemporaryDirectory(prefix="mlcost-spill-")
        self._files: dict[int, list[Path]] = {}
        self._written = 0
        self.scopes: set[tuple[str, str, dt.date]] = set()

    def write(self, charges: pa.Table) -> None:
        """Write grouped charges to their day buckets' files."""
        if charges.num_rows == 0:
            return
        scopes = charges.select(list(_SCOPE_KEYS)).group_by(list(_SCOPE_KEYS)).aggregate([])
        self.scopes.update(tuple(row.values()) for row in scopes.to_pylist())
        buckets = pc.cast(charges["day"], pa.int32()).to_numpy() % BUCKETS
        order = np.argsort(buckets, kind="stable")
        ordered = charges.take(pa.array(order))
        sorted_buckets = buckets[order]
        starts = np.flatnonzero(np.diff(sorted_buckets, prepend=-1))
        ends = [*starts[1:], len(order)]
        for start, end in zip(starts, ends, strict=True):
            bucket = int(sorted_buckets[start])
            path = Path(self._folder.name) / f"{bucket:02d}-{self._written:06d}.arrow"
            self._written += 1
            with (
                pa.OSFile(str(path), "wb") as sink,
                pa.ipc.new_file(sink, charges.schema, options=_OPTIONS) as writer,
            ):
                writer.write_table(ordered.slice(start, end - start))
            self._files.setdefault(bucket, []).append(path)

    def parts(self) -> Iterator[pa.Table]:
        """Yield the grouped charges bucket by bucket, each summed; remove the files."""
        try:
            for bucket in sorted(self._files):
                partials: list[pa.Table] = []
                held = merged = 0
                for path in self._files.pop(bucket):
                    with pa.OSFile(str(path), "rb") as source:
                        table = pa.ipc.open_file(source).read_all()
                    path.unlink()
                    partials.append(table)
                    held += table.num_rows
                    # merged again once what is held doubles what the last merge left: each row
                    # is merged a few times, not once per file
                    if held > max(self.merge_rows, 2 * merged) and len(partials) > 1:
                        partials = [self.merge(partials)]
                        held = merged = partials[0].num_rows
                yield self.merge(partials)
        finally:
            self.close()

    def close(self) -> None:
        """Remove the folder and what is left in it."""
        self._files.clear()
        self._folder.cleanup()
