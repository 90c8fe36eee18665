"""A resource scanner as one declaration: its name, the kinds it finds, their fixes, the scan.

Each scanner module ends with its `ResourceScanner`s; bot/waste/catalog.py lists them, and
everything after the scan (posting, labels, Stop it's words and advice, closing, the ledger
merge) looks the kind or the action up there instead of naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.waste.scan.context import ScanContext
from bot.waste.scan.model import FindingKind, ResourceFinding, StopAction

Scanner = Callable[[Callable[..., Any], str, ScanContext], list[ResourceFinding]]


def always(ctx: ScanContext) -> bool:
    """Run the scanner on every scan."""
    return True


@dataclass(frozen=True)
class ResourceScanner:
    """A scanner of the account's resources and what its findings are.

    `name` names it in failures and notes ("EC2 GPU instances"); `scan(aws, region, ctx)` returns
    its findings; `kinds` are the kinds of finding it reports, `stops` the fixes they recommend.
    A scanner that is not `per_region` runs once per scan, in the first region, and only when
    `runs(ctx)` says so (S3: the patterns name their buckets). `closes_missing`: a finding of its
    kinds that a complete scan no longer finds is closed (bot/waste/lifecycle.py).
    """

    name: str
    scan: Scanner
    kinds: tuple[FindingKind, ...]
    stops: tuple[StopAction, ...] = ()
    per_region: bool = True
    runs: Callable[[ScanContext], bool] = always
    closes_missing: bool = True
