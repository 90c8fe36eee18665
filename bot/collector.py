"""Pause Python's cyclic garbage collector around a burst of allocations.

A poll cycle at scale allocates millions of short-lived objects (Decimals, rows, statuses,
messages) that reference counting frees as it goes. The cyclic collector still runs a pass every
700 allocations, and its older generations walk the whole growing heap: at 100x (50,000 budgets,
5,000 alerts at once) that was 0.6 to 0.8 s of a 4.4 s cycle (docs/benchmarks.md). Inside
`paused()` it does not run; reference cycles made meanwhile are collected after it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """Disable the cyclic collector for the block, if it was enabled (nested blocks, and a block
    in another thread that started first, leave it as they found it)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
