"""S3: checkpoint and dataset prefixes nobody wrote to for N days and no lifecycle rule covers.

Patterns (MLCOST_SCAN_S3_PATTERNS) look like `s3://bucket/checkpoints/*`: the bucket is literal,
the key part a glob. Each match is grouped at the depth of the pattern (`checkpoints/run-17/`
for `checkpoints/*`); a group is stale when its newest object is older than
MLCOST_SCAN_S3_STALE_DAYS. Sizes and storage classes come from the bucket's latest S3 Inventory
when MLCOST_SCAN_S3_INVENTORY names its destination and it is usable (s3_inventory.py), else from
the listing (ListObjectsV2), with a scan note saying why the inventory was not used.
A bucket tagged `mlcost:protect` is skipped; so is a group an enabled lifecycle rule with an
expiration or transition covers (its prefix filter is a prefix of the group's).
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from bot.errors import UsageError
from bot.waste.pricing import monthly_from_gb
from bot.waste.scan.context import ScanContext
from bot.waste.scan.model import (
    Action,
    FindingKind,
    Reason,
    Recommendation,
    Resource,
    ResourceFinding,
    ResourceKind,
    StopAction,
    is_protected,
    tag_tuple,
)
from bot.waste.scan.s3_inventory import InventoryUnusable, inventory_objects, latest_manifest
from bot.waste.scan.scanner import ResourceScanner

log = logging.getLogger(__name__)

COLDER_CLASS = "GLACIER_IR"  # Glacier Instant Retrieval: still read in milliseconds
WILDCARDS = "*?["


@dataclass
class Group:
    """Objects under one prefix: their size per storage class and newest write."""

    bytes_by_class: dict[str, int] = field(default_factory=dict)
    objects: int = 0
    newest: dt.datetime | None = None


def parse_pattern(pattern: str) -> tuple[str, str]:
    """Split `s3://bucket/key-glob` into bucket and key glob."""
    if not pattern.startswith("s3://") or "/" not in pattern[5:]:
        raise UsageError(f"MLCOST_SCAN_S3_PATTERNS: {pattern!r} is not s3://bucket/prefix/*")
    bucket, _, glob = pattern[5:].partition("/")
    if not bucket or any(c in bucket for c in WILDCARDS):
        raise UsageError(f"MLCOST_SCAN_S3_PATTERNS: {pattern!r} must name one bucket")
    return bucket, glob or "*"


class Grouper:
    """Objects of one pattern grouped at its depth (`checkpoints/run-17/` for `checkpoints/*`)."""

    def __init__(self, glob: str) -> None:
        self.glob = glob
        self.literal = glob
        for i, ch in enumerate(glob):
            if ch in WILDCARDS:
                self.literal = glob[:i]
                break
        self.depth = glob.count("/") + 1
        self.groups: dict[str, Group] = {}

    def add(self, key: str, size: int, storage_class: str, modified: dt.datetime) -> None:
        """Count one object in its group if the pattern matches it."""
        if not key.startswith(self.literal):
            return
        parts = key.split("/")
        head = "/".join(parts[: self.depth])
        if not fnmatch.fnmatchcase(head, self.glob):
            return
        prefix = head + "/" if len(parts) > self.depth else head
        group = self.groups.setdefault(prefix, Group())
        group.bytes_by_class[storage_class] = group.bytes_by_class.get(storage_class, 0) + size
        group.objects += 1
        group.newest = modified if group.newest is None else max(group.newest, modified)


def scan_s3_prefixes(
    aws: Callable[..., Any], region: str, ctx: ScanContext
) -> list[ResourceFinding]:
    """Return stale, uncovered prefix groups of every configured pattern."""
    s3 = aws("s3", region)
    by_bucket: dict[str, list[str]] = {}
    for pattern in ctx.policy.s3_patterns:
        by_bucket.setdefault(parse_pattern(pattern)[0], []).append(pattern)
    inventories = dict(ctx.policy.s3_inventory)
    findings: list[ResourceFinding] = []
    for bucket, patterns in by_bucket.items():
        tags = _bucket_tags(s3, bucket)
        if is_protected(tags):
            continue
        rules = _lifecycle_prefixes(s3, bucket)
        location = s3.get_bucket_location(Bucket=bucket).get("LocationConstraint") or "us-east-1"
        groupers, signal = _group_bucket(s3, bucket, patterns, inventories.get(bucket), ctx)
        for pattern, grouper in zip(patterns, groupers, strict=True):
            for prefix, group in sorted(grouper.groups.items()):
                if group.newest is None or group.newest > ctx.now - dt.timedelta(
                    days=ctx.policy.s3_stale_days
                ):
                    continue
                if any(prefix.startswith(rule) for rule in rules):
                    continue
                findings.append(
                    _finding(bucket, prefix, group, tags, location, pattern, signal, ctx)
                )
    return findings


def _group_bucket(
    s3: Any, bucket: str, patterns: list[str], inventory: str | None, ctx: ScanContext
) -> tuple[list[Grouper], str]:
    """Group the bucket's objects per pattern from its inventory when usable, else a listing."""
    globs = [parse_pattern(p)[1] for p in patterns]
    if inventory is not None:
        groupers = [Grouper(g) for g in globs]
        try:
            manifest = latest_manifest(s3, bucket, inventory, ctx.now)
            for obj in inventory_objects(s3, manifest):
                for grouper in groupers:
                    grouper.add(obj.key, obj.size, obj.storage_class, obj.last_modified)
        except InventoryUnusable as why:
            ctx.note(f"S3 s3://{bucket}/: sized from listings, not S3 Inventory: {why}")
            log.warning("scan: s3://%s/ sized from listings: %s", bucket, why)
        else:
            log.info("scan: s3://%s/ sized from S3 Inventory %s", bucket, manifest.stamp)
            return groupers, (
                f"last modified times and sizes from S3 Inventory ({manifest.file_format}, "
                f"delivered {manifest.stamp})"
            )
    groupers = [_listed(s3, bucket, g) for g in globs]
    return groupers, "last modified times and sizes from ListObjectsV2"


def _listed(s3: Any, bucket: str, glob: str) -> Grouper:
    grouper = Grouper(glob)
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=grouper.literal)
    for page in pages:
        for obj in page.get("Contents", []):
            cls = obj.get("StorageClass") or "STANDARD"
            grouper.add(obj["Key"], int(obj.get("Size", 0)), cls, obj["LastModified"])
    return grouper


def _bucket_tags(s3: Any, bucket: str) -> tuple[tuple[str, str], ...]:
    try:
        return tag_tuple(s3.get_bucket_tagging(Bucket=bucket).get("TagSet"))
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "NoSuchTagSet":
            return ()
        raise


def _lifecycle_prefixes(s3: Any, bucket: str) -> list[str]:
    """Return the prefixes enabled expiration/transition rules cover ('' covers everything)."""
    try:
        rules = s3.get_bucket_lifecycle_configuration(Bucket=bucket).get("Rules", [])
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "NoSuchLifecycleConfiguration":
            return []
        raise
    prefixes = []
    for rule in rules:
        if rule.get("Status") != "Enabled":
            continue
        acts = rule.get("Expiration") or rule.get("Transitions") or rule.get("Transition")
        if not acts:
            continue
        flt = rule.get("Filter") or {}
        prefix = flt.get("Prefix")
        if prefix is None:
            prefix = (flt.get("And") or {}).get("Prefix")
        if prefix is None:
            prefix = rule.get("Prefix", "")
        prefixes.append(prefix)
    return prefixes


def _finding(
    bucket: str,
    prefix: str,
    group: Group,
    tags: tuple[tuple[str, str], ...],
    region: str,
    pattern: str,
    signal: str,
    ctx: ScanContext,
) -> ResourceFinding:
    cost, sources, colder_cost = Decimal(0), set(), Decimal(0)
    colder = ctx.prices.get("s3", COLDER_CLASS)
    total = sum(group.bytes_by_class.values())
    for cls, size in group.bytes_by_class.items():
        row = ctx.prices.get("s3", cls)
        if row is None:
            continue
        cost += monthly_from_gb(row.price, size)
        sources.add(row.label)
        moved = colder is not None and colder.price < row.price
        colder_cost += monthly_from_gb(colder.price if colder and moved else row.price, size)
    saving = max(Decimal(0), cost - colder_cost)
    age = (ctx.now - group.newest).days if group.newest else 0
    uri = f"s3://{bucket}/{prefix}"
    resource = ctx.owned(
        Resource(
            kind=ResourceKind.S3_PREFIX,
            resource_id=uri,
            account=ctx.account,
            region=region,
            resource_type=", ".join(sorted(group.bytes_by_class)),
            size=f"{Decimal(total) / Decimal(1024**3):.2f} GiB in {group.objects} objects",
            tags=tags,
            target=(("bucket", bucket), ("prefix", prefix)),
        )
    )
    return ResourceFinding(
        resource=resource,
        reason=Reason.STALE_OBJECTS,
        evidence=f"{uri} ({group.objects} objects) matches {pattern}; newest written {age} days "
        "ago, and no lifecycle rule covers it",
        signal=signal,
        monthly_cost=cost,
        price_source=" + ".join(sorted(sources)) or "unpriced",
        recommendation=Recommendation(
            Action.LIFECYCLE_TO_COLDER_CLASS,
            f"add a lifecycle rule moving {prefix} to Glacier Instant Retrieval (or expiring it)",
            saving,
        ),
        currency=ctx.ledger.currency,
    )


def no_ledger_ids(
    resource_id: str, target: Mapping[str, str], members: tuple[str, ...]
) -> set[str]:
    """Return no ledger ids: the ledger bills the bucket, which holds more than the prefix."""
    return set()


def lifecycle_advice(target: Mapping[str, Any]) -> str:
    """Say which lifecycle rule to add by hand: mlcost never writes one."""
    where = f"s3://{target.get('bucket', '?')}/{target.get('prefix', '')}"
    return (
        f"mlcost never writes S3 lifecycle rules; add one for {where} moving it to a colder "
        "class (or expiring it)."
    )


def has_patterns(ctx: ScanContext) -> bool:
    """Scan S3 only when prefix patterns are configured (they name the buckets)."""
    return bool(ctx.policy.s3_patterns)


PREFIXES = ResourceScanner(
    name="S3 checkpoint and dataset prefixes",
    scan=scan_s3_prefixes,
    kinds=(FindingKind(ResourceKind.S3_PREFIX, "S3 prefix", no_ledger_ids),),
    stops=(
        StopAction(
            Action.LIFECYCLE_TO_COLDER_CLASS,
            "records the approval only: mlcost never writes S3 lifecycle rules (a recommendation)",
            lifecycle_advice,
        ),
    ),
    per_region=False,
    runs=has_patterns,
)
