"""A billing export delivered again and again to S3 (or a folder), polled for recent months.

AWS refreshes a CUR 2.0 or FOCUS Data Export at least daily into one folder per billing period
(`.../data/BILLING_PERIOD=2026-11/`), and may still restate a month for two weeks after it ends.
A poll re-reads only the current and the previous billing period; each replaces its month in the
ledger, so re-reading never doubles anything.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from bot.errors import IngestError
from bot.ingest.sources.base import DEFAULT_CURRENCY, Progress, SourceData, SpendSource
from bot.ingest.sources.cur import CurSource
from bot.ingest.sources.files import expand_locations, period_folder
from bot.ingest.sources.focus import FocusSource
from bot.periods import month_of

log = logging.getLogger(__name__)

EXPORT_KINDS = ("cur", "focus")


def export_period(location: str) -> dt.date | None:
    """Return the billing period (its first day) a file's path names, or None."""
    found = period_folder(location)
    return found[1] if found else None


def recent_periods(today: dt.date) -> list[dt.date]:
    """Return the previous and the current billing period (first days) of a day."""
    current = month_of(today).start
    return [month_of(current - dt.timedelta(days=1)).start, current]


class RecentExportSource:
    """Re-read the recent billing periods of an export; files without one in their path too."""

    def __init__(
        self,
        kind: str,
        location: str,
        periods: list[dt.date],
        s3_client: Any | None = None,
        *,
        default_currency: str = DEFAULT_CURRENCY,
    ) -> None:
        if kind not in EXPORT_KINDS:
            raise IngestError(f"{kind!r} is not an export kind; use {', '.join(EXPORT_KINDS)}")
        self.kind = kind
        self.periods = sorted(periods)
        labels = ", ".join(f"{p:%Y-%m}" for p in self.periods)
        self.location = f"{location} (billing periods {labels})"
        self._root = location
        self._s3 = s3_client
        self.default_currency = default_currency

    def files(self) -> list[str]:
        """List the export's files for the wanted billing periods (and any without one)."""
        found = {f: export_period(f) for f in expand_locations([self._root], self._s3)}
        unmarked = [f for f, period in found.items() if period is None]
        if unmarked:
            log.warning(
                "%s: %d file(s) name no billing period in their path; every poll re-reads them",
                self._root,
                len(unmarked),
            )
        chosen = [f for f, period in found.items() if period in self.periods] + unmarked
        if not chosen:
            raise IngestError(f"{self.location}: no export files for these billing periods yet")
        return chosen

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        files = self.files()
        currency = self.default_currency
        source: SpendSource = (
            CurSource(files, self._s3, default_currency=currency)
            if self.kind == "cur"
            else FocusSource(files, self._s3, default_currency=currency)
        )
        return source.read(tag_keys, progress)
