"""A scheduled job as its domain declares it: an id, a schedule and a callable with its deps bound.

Each domain declares its own jobs (bot/poll/jobs.py, bot/review/jobs.py, bot/waste/jobs.py),
the composition root collects them and bot/notify/scheduler.py runs them in the leader. Plain
values only, so declaring a job loads no scheduler library.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Every:
    """Run every `interval`, the first run one interval after the scheduler starts."""

    interval: dt.timedelta


@dataclass(frozen=True)
class DailyAt:
    """Run every day at hour:minute in `timezone` (MLCOST_TIMEZONE)."""

    hour: int
    minute: int
    timezone: str


Schedule = Every | DailyAt


@dataclass(frozen=True)
class JobSpec:
    """A scheduled job: what runs, when, and whether it also runs as soon as a leader starts
    (then `at_start` says in words what that first run does, for serve's startup line)."""

    id: str
    run: Callable[[], object]
    schedule: Schedule
    run_at_start: bool = False
    at_start: Callable[[], str] | None = None
