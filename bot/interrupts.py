"""Waiting in the main thread without missing a signal."""

from __future__ import annotations

import threading

SIGNAL_CHECK_SECONDS = 0.5


def wait_interruptibly(event: threading.Event) -> None:
    """Wait for `event` in the main thread, running signal handlers at least twice a second.

    The kernel hands a process's signal to any thread not blocking it, and Python runs handlers
    in the main thread only: a signal that lands on another thread is flagged, and a main thread
    asleep in an untimed wait never wakes to run its handler (Ctrl-C or SIGTERM did nothing).
    A timed wait returns, and the handler runs (its exception is raised) here.
    """
    while not event.wait(SIGNAL_CHECK_SECONDS):
        pass
