"""S3 prefixes sized from the bucket's S3 Inventory (MLCOST_SCAN_S3_INVENTORY) instead of listings.

Each test writes what S3 would deliver (AWS, "Locating your inventory list"): under the
destination `inventory-bucket/ml-artifacts/daily-inventory/`, a `YYYY-MM-DDTHH-MMZ/manifest.json`
naming the source bucket, format, schema and data files, and the data files themselves (gzipped
CSV without a header and with URL-encoded keys, or Parquet). The source bucket holds one real
object that a listing would see as written today, so a finding proves the inventory was read.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import hashlib
import io
import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from moto import mock_aws

from bot.cli import main
from bot.config import Settings
from bot.waste.pricing import load_price_table
from bot.waste.scan.context import LedgerView, ScanContext, ScanPolicy, policy_from_settings
from bot.waste.scan.model import Action
from bot.waste.scan.s3 import scan_s3_prefixes
from tests.support.aws_calls import CountingAws

REGION = "us-east-1"
SOURCE, DEST = "ml-artifacts", "inventory-bucket"
FOLDER = f"{SOURCE}/daily-inventory/"
DESTINATION = f"s3://{DEST}/{FOLDER}"
PATTERN = f"s3://{SOURCE}/checkpoints/*"
CSV_SCHEMA = (
    "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, StorageClass"
)
GIB = 1024**3


@pytest.fixture
def world() -> Any:
    """Both buckets, a fresh object in the source, and a counter of ListObjectsV2 per bucket."""
    with mock_aws():
        aws = CountingAws()
        s3 = aws("s3", REGION)
        s3.create_bucket(Bucket=SOURCE)
        s3.create_bucket(Bucket=DEST)
        s3.put_object(Bucket=SOURCE, Key="checkpoints/run-1/written-today.txt", Body=b"x")
        listed: list[str] = []
        s3.meta.events.register(
            "before-parameter-build.s3.ListObjectsV2",
            lambda params, **_: listed.append(params["Bucket"]),
        )
        yield aws, dt.datetime.now(dt.UTC), listed


def objects(now: dt.datetime) -> list[dict[str, Any]]:
    """The inventory's rows: current objects, an old version and a delete marker."""

    def row(key: str, size: int, days: int, **extra: Any) -> dict[str, Any]:
        out = {
            "key": key,
            "version_id": "v1",
            "is_latest": True,
            "is_delete_marker": False,
            "size": size,
            "last_modified_date": now - dt.timedelta(days=days),
            "storage_class": "STANDARD",
        }
        return {**out, **extra}

    return [
        row("checkpoints/run-1/model.pt", 200 * GIB, 60),
        row("checkpoints/run-1/optimizer.pt", 100 * GIB, 45),
        row("checkpoints/run-1/old.pt", 50 * GIB, 40, storage_class="GLACIER_IR"),
        row("checkpoints/run 2/model.pt", 10 * GIB, 90),  # a space: URL-encoded in CSV
        row("checkpoints/run-3/model.pt", 10 * GIB, 2),  # written two days ago: not stale
        # run-4 was deleted: its old version and its delete marker are not current objects
        row("checkpoints/run-4/model.pt", 500 * GIB, 90, is_latest=False),
        row("checkpoints/run-4/model.pt", 0, 20, is_delete_marker=True, version_id="v2"),
        row("datasets/imagenet/train.tar", 900 * GIB, 300),  # another pattern's, not this one's
    ]


def csv_file(rows: list[dict[str, Any]]) -> bytes:
    text = io.StringIO()
    out = csv.writer(text, quoting=csv.QUOTE_ALL)
    for r in rows:
        out.writerow(
            [
                SOURCE,
                r["key"].replace(" ", "%20"),
                r["version_id"],
                str(r["is_latest"]).lower(),
                str(r["is_delete_marker"]).lower(),
                "" if r["is_delete_marker"] else str(r["size"]),
                r["last_modified_date"].strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                "" if r["is_delete_marker"] else r["storage_class"],
            ]
        )
    return gzip.compress(text.getvalue().encode())


def columnar_file(rows: list[dict[str, Any]], file_format: str) -> bytes:
    """The rows as S3 writes Parquet or ORC: snake-case columns, timestamps in milliseconds."""
    table = pa.table(
        {
            "bucket": [SOURCE] * len(rows),
            "key": [r["key"] for r in rows],
            "version_id": [r["version_id"] for r in rows],
            "is_latest": [r["is_latest"] for r in rows],
            "is_delete_marker": [r["is_delete_marker"] for r in rows],
            "size": pa.array([r["size"] for r in rows], pa.int64()),
            # TIMESTAMP_MILLIS, as the manifest's fileSchema says
            "last_modified_date": pa.array(
                [r["last_modified_date"].replace(tzinfo=None) for r in rows], pa.timestamp("ms")
            ),
            "storage_class": [r["storage_class"] for r in rows],
        }
    )
    out = io.BytesIO()
    if file_format == "Parquet":
        pq.write_table(table, out, compression="snappy")
    else:
        orc.write_table(table, out, compression="zlib")
    return out.getvalue()


def deliver(
    aws: CountingAws,
    when: dt.datetime,
    files: list[bytes],
    *,
    file_format: str = "CSV",
    schema: str = CSV_SCHEMA,
    source: str = SOURCE,
) -> str:
    """Put a delivery's data files and manifest.json where S3 would; return its folder name."""
    s3 = aws("s3", REGION)
    stamp = when.strftime("%Y-%m-%dT%H-%MZ")
    ext = {"CSV": "csv.gz", "Parquet": "parquet", "ORC": "orc"}[file_format]
    listed = []
    for n, body in enumerate(files):
        key = f"{FOLDER}data/{stamp}-{n}.{ext}"
        s3.put_object(Bucket=DEST, Key=key, Body=body)
        listed.append({"key": key, "size": len(body), "MD5checksum": hashlib.md5(body).hexdigest()})
    manifest = {
        "sourceBucket": source,
        "destinationBucket": f"arn:aws:s3:::{DEST}",
        "version": "2016-11-30",
        "creationTimestamp": str(int(when.timestamp() * 1000)),
        "fileFormat": file_format,
        "fileSchema": schema,
        "files": listed,
    }
    s3.put_object(Bucket=DEST, Key=f"{FOLDER}{stamp}/manifest.json", Body=json.dumps(manifest))
    return stamp


def context(now: dt.datetime, inventory: str | None = DESTINATION) -> ScanContext:
    return ScanContext(
        account="123456789012",
        now=now,
        policy=ScanPolicy(
            s3_patterns=(PATTERN,),
            s3_inventory=((SOURCE, inventory),) if inventory else (),
        ),
        ledger=LedgerView(),
        prices=load_price_table(),
    )


def test_prefixes_are_sized_from_a_csv_inventory_without_listing_the_bucket(world: Any) -> None:
    aws, now, listed = world
    rows = objects(now)
    # two data files, as S3 splits big inventories; an older delivery the scan must not read
    deliver(aws, now - dt.timedelta(days=8), [csv_file(rows[:1])])
    stamp = deliver(aws, now - dt.timedelta(hours=5), [csv_file(rows[:4]), csv_file(rows[4:])])
    ctx = context(now)
    findings = {f.resource_id: f for f in scan_s3_prefixes(aws, REGION, ctx)}

    assert sorted(findings) == [
        f"s3://{SOURCE}/checkpoints/run 2/",  # the key decoded, as S3 names it
        f"s3://{SOURCE}/checkpoints/run-1/",
    ]
    run1 = findings[f"s3://{SOURCE}/checkpoints/run-1/"]
    assert run1.resource.size == "350.00 GiB in 3 objects"  # not the 1-byte object written today
    assert run1.resource.resource_type == "GLACIER_IR, STANDARD"
    assert run1.monthly_cost == Decimal("7.10")  # 300 GiB × 0.023 + 50 GiB × 0.004
    assert run1.recommendation.action == Action.LIFECYCLE_TO_COLDER_CLASS
    assert run1.recommendation.monthly_saving == Decimal("5.70")  # 300 GiB × (0.023 - 0.004)
    assert "newest written 40 days ago" in run1.evidence
    assert run1.signal == (
        f"last modified times and sizes from S3 Inventory (CSV, delivered {stamp})"
    )
    assert findings[f"s3://{SOURCE}/checkpoints/run 2/"].monthly_cost == Decimal("0.23")
    # the source bucket was never listed: one ListObjectsV2 found the newest delivery
    assert listed == [DEST]
    assert aws.calls["s3:GetObject"] == 3  # the manifest and its two data files
    assert ctx.notes == []


@pytest.mark.parametrize("file_format", ["Parquet", "ORC"])
def test_a_parquet_or_orc_inventory_sizes_the_same_prefixes(world: Any, file_format: str) -> None:
    aws, now, listed = world
    stamp = deliver(
        aws,
        now - dt.timedelta(hours=30),
        [columnar_file(objects(now), file_format)],
        file_format=file_format,
        schema="(the files carry their own schema)",
    )
    ctx = context(now)
    findings = {f.resource_id: f for f in scan_s3_prefixes(aws, REGION, ctx)}
    assert sorted(findings) == [
        f"s3://{SOURCE}/checkpoints/run 2/",
        f"s3://{SOURCE}/checkpoints/run-1/",
    ]
    run1 = findings[f"s3://{SOURCE}/checkpoints/run-1/"]
    assert run1.monthly_cost == Decimal("7.10") and "newest written 40 days ago" in run1.evidence
    assert run1.signal.endswith(f"({file_format.upper()}, delivered {stamp})")
    assert listed == [DEST] and ctx.notes == []


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("none delivered", f"no S3 Inventory manifest.json under {DESTINATION}"),
        ("three days old", "more than 2 days old"),
        ("another bucket's", "is the inventory of 'ml-data', not of 'ml-artifacts'"),
        ("no sizes", "lists no Size: add them to the inventory's fields"),
        ("corrupt file", "unreadable s3://inventory-bucket/"),
    ],
)
def test_an_unusable_inventory_falls_back_to_listing_with_a_note(
    world: Any, case: str, said: str
) -> None:
    aws, now, listed = world
    rows, recent = objects(now), now - dt.timedelta(hours=5)
    if case == "three days old":
        deliver(aws, now - dt.timedelta(days=3), [csv_file(rows)])
    elif case == "another bucket's":
        deliver(aws, recent, [csv_file(rows)], source="ml-data")
    elif case == "no sizes":
        deliver(aws, recent, [csv_file(rows)], schema="Bucket, Key, LastModifiedDate")
    elif case == "corrupt file":
        deliver(aws, recent, [b"not gzip"])
    ctx = context(now)
    # the listing sees the only real object, written today: nothing stale
    assert scan_s3_prefixes(aws, REGION, ctx) == []
    assert SOURCE in listed
    [note] = ctx.notes
    assert note.startswith(f"S3 s3://{SOURCE}/: sized from listings, not S3 Inventory: ")
    assert said in note


def test_without_an_inventory_the_bucket_is_listed_and_nothing_is_noted(world: Any) -> None:
    aws, now, listed = world
    deliver(aws, now, [csv_file(objects(now))])  # delivered, but not configured
    ctx = context(now, inventory=None)
    assert scan_s3_prefixes(aws, REGION, ctx) == []
    assert listed == [SOURCE] and aws.calls["s3:GetObject"] == 0 and ctx.notes == []


def test_the_setting_maps_buckets_to_destinations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLCOST_SCAN_S3_INVENTORY", json.dumps({SOURCE: DESTINATION}))
    assert policy_from_settings(Settings()).s3_inventory == ((SOURCE, DESTINATION),)


def test_a_bad_destination_is_refused_before_any_aws_call(
    database_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLCOST_SCAN_S3_INVENTORY", json.dumps({SOURCE: "inventory-bucket/x/"}))
    code = main(["--database-url", database_url, "waste", "scan", "--regions", REGION])
    err = capsys.readouterr().err
    assert code == 2
    assert "MLCOST_SCAN_S3_INVENTORY: 'inventory-bucket/x/' is not s3://bucket/prefix/" in err
