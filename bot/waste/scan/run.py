"""Scan every configured region with every scanner; one failing scanner fails alone."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bot.errors import AwsUnavailable, aws_error_reason
from bot.waste.catalog import scanners as registered_scanners
from bot.waste.scan.context import ScanContext
from bot.waste.scan.model import ResourceFinding
from bot.waste.scan.scanner import Scanner

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScanFailure:
    """A scanner that could not finish: where, which, and why (AWS's error code and message)."""

    region: str
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind} in {self.region} not scanned: {self.message}"


@dataclass(frozen=True)
class ScanNote:
    """What a scanner said that is neither a finding nor a failure (e.g. what it left unjudged)."""

    region: str
    kind: str
    message: str

    def __str__(self) -> str:
        return self.message  # scanners write it whole: it names the resource and its region


@dataclass(frozen=True)
class ScanReport:
    """Findings ranked by monthly cost, largest first, the scanners that failed, and notes."""

    account: str
    regions: tuple[str, ...]
    findings: tuple[ResourceFinding, ...]
    failures: tuple[ScanFailure, ...]
    currency: str
    notes: tuple[ScanNote, ...] = ()

    @property
    def total_monthly_cost(self) -> Decimal:
        return sum((f.monthly_cost for f in self.findings), Decimal("0.00"))

    @property
    def total_monthly_saving(self) -> Decimal:
        return sum((f.monthly_saving for f in self.findings), Decimal("0.00"))


def account_id(aws: Callable[..., Any], region: str) -> str:
    """Return the scanned account's id (STS GetCallerIdentity).

    Raise AwsUnavailable when AWS cannot be called at all (no credentials, an expired token):
    then no scanner could run either.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return str(aws("sts", region).get_caller_identity()["Account"])
    except (BotoCoreError, ClientError) as exc:
        raise AwsUnavailable(f"cannot scan the account: {aws_error_reason(exc)}") from None


def scan_account(
    aws: Callable[..., Any],
    regions: Sequence[str],
    ctx: ScanContext,
    scanners: dict[str, Scanner] | None = None,
) -> ScanReport:
    """Run every registered scanner in every region (bot/waste/catalog.py); one that is not
    per region (S3: patterns name their buckets) runs once, in the first, when it wants to.

    `scanners` (name: scan) replaces the registered ones, each run in every region. Each scanner
    run gets its own copy of `ctx` whose notes become the report's, filed under the scanner's
    kind and region (a scanner that then failed keeps the notes it left).
    """
    from botocore.exceptions import BotoCoreError, ClientError

    findings: list[ResourceFinding] = []
    failures: list[ScanFailure] = []
    notes: list[ScanNote] = []
    if scanners is not None:
        jobs = [(region, name, scan) for region in regions for name, scan in scanners.items()]
    else:
        known = registered_scanners()
        jobs = [
            (region, s.name, s.scan)
            for region in regions
            for s in known
            if s.per_region and s.runs(ctx)
        ] + [
            (regions[0], s.name, s.scan)
            for s in known
            if not s.per_region and regions and s.runs(ctx)
        ]
    for region, kind, scanner in jobs:
        said: list[str] = []
        try:
            found = scanner(aws, region, dataclasses.replace(ctx, notes=said))
        except ClientError as exc:
            error = exc.response.get("Error", {})
            message = f"{error.get('Code', 'error')}: {error.get('Message', '')}".rstrip(": ")
            failures.append(ScanFailure(region, kind, message))
            log.warning("scan: %s in %s failed: %s", kind, region, message)
            continue
        except BotoCoreError as exc:
            failures.append(ScanFailure(region, kind, str(exc)))
            log.warning("scan: %s in %s failed: %s", kind, region, exc)
            continue
        finally:
            notes.extend(ScanNote(region, kind, message) for message in said)
        findings.extend(found)
    ranked = sorted(findings, key=lambda f: (-f.monthly_cost, f.key))
    return ScanReport(
        account=ctx.account,
        regions=tuple(regions),
        findings=tuple(ranked),
        failures=tuple(failures),
        currency=ctx.ledger.currency,
        notes=tuple(notes),
    )
