"""EBS: unattached volumes, and snapshots older than N days whose source volume is gone.

Snapshots that back one of the account's AMIs are never reported (deleting them would fail).
A snapshot is priced at its full volume size, an upper bound: snapshots are incremental.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from bot.money import format_money_places
from bot.waste.pricing import GIB, monthly_from_gb
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
from bot.waste.scan.pricing_rules import storage_price
from bot.waste.scan.scanner import ResourceScanner


def scan_volumes(aws: Callable[..., Any], region: str, ctx: ScanContext) -> list[ResourceFinding]:
    """Return volumes in the `available` state (attached to nothing)."""
    ec2 = aws("ec2", region)
    pages = ec2.get_paginator("describe_volumes").paginate(
        Filters=[{"Name": "status", "Values": ["available"]}]
    )
    snapshot_row = ctx.prices.get("ebs-snapshot", "standard")
    findings = []
    for page in pages:
        for vol in page.get("Volumes", []):
            tags = tag_tuple(vol.get("Tags"))
            if is_protected(tags):
                continue
            vid, vtype, size_gib = vol["VolumeId"], vol.get("VolumeType", "gp2"), vol["Size"]
            size = Decimal(size_gib) * GIB
            price = storage_price(ctx, [vid], "ebs", vtype, size)
            keep = monthly_from_gb(snapshot_row.price, size) if snapshot_row else Decimal(0)
            created = vol.get("CreateTime")
            since = f", created {created:%Y-%m-%d}" if created else ""
            resource = ctx.owned(
                Resource(
                    kind=ResourceKind.EBS_VOLUME,
                    resource_id=vid,
                    account=ctx.account,
                    region=region,
                    resource_type=vtype,
                    size=f"{size_gib} GiB",
                    tags=tags,
                    target=(("volume_id", vid),),
                )
            )
            findings.append(
                ResourceFinding(
                    resource=resource,
                    reason=Reason.UNATTACHED,
                    evidence=f"{vtype} volume {vid} ({size_gib} GiB) is attached to no "
                    f"instance{since}",
                    signal="volume state available (DescribeVolumes)",
                    monthly_cost=price.monthly,
                    price_source=price.source,
                    recommendation=Recommendation(
                        Action.SNAPSHOT_AND_DELETE_VOLUME,
                        "snapshot it, then delete the volume (the snapshot costs at most "
                        f"{format_money_places(keep, ctx.ledger.currency, 2)} a month)",
                        max(Decimal(0), price.monthly - keep),
                    ),
                    currency=ctx.ledger.currency,
                )
            )
    return findings


def scan_snapshots(aws: Callable[..., Any], region: str, ctx: ScanContext) -> list[ResourceFinding]:
    """Return own snapshots older than MLCOST_SCAN_SNAPSHOT_DAYS whose volume no longer exists."""
    ec2 = aws("ec2", region)
    cutoff = ctx.now - dt.timedelta(days=ctx.policy.snapshot_days)
    old = [
        snap
        for page in ec2.get_paginator("describe_snapshots").paginate(OwnerIds=["self"])
        for snap in page.get("Snapshots", [])
        if snap.get("StartTime") is not None and snap["StartTime"] <= cutoff
    ]
    if not old:
        return []
    volumes = _existing_volumes(ec2, {s["VolumeId"] for s in old if s.get("VolumeId")})
    in_amis = {
        m["Ebs"]["SnapshotId"]
        for page in ec2.get_paginator("describe_images").paginate(Owners=["self"])
        for image in page.get("Images", [])
        for m in image.get("BlockDeviceMappings", [])
        if m.get("Ebs", {}).get("SnapshotId")
    }
    findings = []
    for snap in old:
        sid, started = snap["SnapshotId"], snap["StartTime"]
        if sid in in_amis or snap.get("VolumeId") in volumes:
            continue
        tags = tag_tuple(snap.get("Tags"))
        if is_protected(tags):
            continue
        tier = "archive" if snap.get("StorageTier") == "archive" else "standard"
        size_gib = snap.get("VolumeSize") or 0
        price = storage_price(
            ctx, [sid, f"snapshot/{sid}"], "ebs-snapshot", tier, Decimal(size_gib) * GIB
        )
        age = (ctx.now - started).days
        resource = ctx.owned(
            Resource(
                kind=ResourceKind.EBS_SNAPSHOT,
                resource_id=sid,
                account=ctx.account,
                region=region,
                resource_type=tier,
                size=f"{size_gib} GiB",
                tags=tags,
                target=(("snapshot_id", sid),),
            )
        )
        findings.append(
            ResourceFinding(
                resource=resource,
                reason=Reason.ORPHANED_SNAPSHOT,
                evidence=f"snapshot {sid} ({size_gib} GiB) is {age} days old and its volume "
                f"{snap.get('VolumeId') or '?'} no longer exists",
                signal="snapshot age and source volume (DescribeSnapshots, DescribeVolumes)",
                monthly_cost=price.monthly,
                price_source=price.source
                + ("" if price.source == "ledger" else " (full volume size: an upper bound)"),
                recommendation=Recommendation(
                    Action.DELETE_SNAPSHOT,
                    "delete the snapshot (or move it to the archive tier if it must be kept)",
                    price.monthly,
                ),
                currency=ctx.ledger.currency,
            )
        )
    return findings


def _existing_volumes(ec2: Any, volume_ids: set[str]) -> set[str]:
    """Return which of the volume ids still exist (a volume-id filter, 200 ids a call).

    A filter, not VolumeIds=: a missing id in VolumeIds fails the whole call.
    """
    ids, found = sorted(volume_ids), set()
    for offset in range(0, len(ids), 200):
        chunk = ids[offset : offset + 200]
        pages = ec2.get_paginator("describe_volumes").paginate(
            Filters=[{"Name": "volume-id", "Values": chunk}]
        )
        found |= {v["VolumeId"] for page in pages for v in page.get("Volumes", [])}
    return found


VOLUMES = ResourceScanner(
    name="EBS volumes",
    scan=scan_volumes,
    kinds=(FindingKind(ResourceKind.EBS_VOLUME, "EBS volume"),),
    stops=(
        StopAction(
            Action.SNAPSHOT_AND_DELETE_VOLUME,
            "snapshots the volume, waits for the snapshot, then deletes it",
        ),
    ),
)
SNAPSHOTS = ResourceScanner(
    name="EBS snapshots",
    scan=scan_snapshots,
    kinds=(FindingKind(ResourceKind.EBS_SNAPSHOT, "EBS snapshot"),),
    stops=(StopAction(Action.DELETE_SNAPSHOT, "deletes the snapshot"),),
)
