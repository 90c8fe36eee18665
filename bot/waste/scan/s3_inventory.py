"""Read a bucket's latest S3 Inventory instead of listing its objects.

MLCOST_SCAN_S3_INVENTORY maps a bucket to its inventory's destination, the folder S3 writes under
`destination-prefix/source-bucket/config-ID/` (AWS, "Locating your inventory list"):

    <destination>/YYYY-MM-DDTHH-MMZ/manifest.json   one folder per delivery
    <destination>/data/<uuid>.csv.gz|.orc|.parquet   the files the manifest lists under `files`

The manifest names `sourceBucket`, `creationTimestamp` (epoch milliseconds), `fileFormat` (CSV,
ORC or Parquet) and `fileSchema`; a CSV file is gzipped, has no header, its columns are the
schema's (`Bucket, Key, ..., Size, LastModifiedDate, ..., StorageClass, ...`) and its keys are
URL-encoded; ORC and Parquet columns are the snake-case names (`key`, `size`,
`last_modified_date`, `storage_class`, ...). Size and LastModifiedDate are optional inventory
fields: an inventory without them cannot size prefixes. Only current versions count (as in
ListObjectsV2): rows with `IsLatest` false or `IsDeleteMarker` true are skipped.

Anything that makes the inventory unusable (no manifest, the newest older than MAX_AGE, another
bucket's manifest, a missing field, an unreadable file, an AWS error) raises InventoryUnusable
with a message for the scan's note; the caller then lists the bucket.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any
from urllib.parse import unquote_plus

from botocore.exceptions import BotoCoreError, ClientError

from bot.errors import UsageError

MAX_AGE = dt.timedelta(days=2)  # a daily inventory older than this is missing deliveries
STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}Z")
SPOOL_BYTES = 64 * 1024**2  # ORC and Parquet need a seekable file: memory up to this, then disk
BATCH_ROWS = 65_536

# CSV fileSchema names -> ORC/Parquet column names
COLUMNS = {
    "Key": "key",
    "Size": "size",
    "LastModifiedDate": "last_modified_date",
    "StorageClass": "storage_class",
    "IsLatest": "is_latest",
    "IsDeleteMarker": "is_delete_marker",
}
REQUIRED = ("Key", "Size", "LastModifiedDate")


class InventoryUnusable(Exception):
    """The bucket's inventory cannot size its prefixes; the message says why."""


@dataclass(frozen=True)
class InventoryObject:
    """One current object as the inventory lists it."""

    key: str
    size: int
    storage_class: str
    last_modified: dt.datetime


@dataclass(frozen=True)
class Manifest:
    """The parts of a manifest.json the scan uses."""

    bucket: str  # the destination bucket the files are in
    stamp: str  # the delivery's folder, YYYY-MM-DDTHH-MMZ
    created: dt.datetime
    file_format: str
    schema: tuple[str, ...]  # the CSV columns (empty for ORC and Parquet: the files say)
    files: tuple[str, ...]


def parse_destination(uri: str) -> tuple[str, str]:
    """Split `s3://bucket/prefix/` into bucket and key prefix (ending with '/' unless empty)."""
    if not uri.startswith("s3://") or not uri[5:].split("/", 1)[0]:
        raise UsageError(
            f"MLCOST_SCAN_S3_INVENTORY: {uri!r} is not s3://bucket/prefix/ "
            "(the inventory's destination-prefix/source-bucket/config-ID/)"
        )
    bucket, _, prefix = uri[5:].partition("/")
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    return bucket, prefix


def latest_manifest(s3: Any, source_bucket: str, destination: str, now: dt.datetime) -> Manifest:
    """Return the newest delivered manifest of the bucket's inventory, if at most MAX_AGE old."""
    bucket, prefix = parse_destination(destination)
    try:
        pages = s3.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix, Delimiter="/"
        )
        folders = [cp["Prefix"] for page in pages for cp in page.get("CommonPrefixes", [])]
        stamps = sorted(
            (s for f in folders if STAMP.fullmatch(s := f[len(prefix) :].rstrip("/"))),
            reverse=True,
        )
        for stamp in stamps:
            delivered = dt.datetime.strptime(stamp, "%Y-%m-%dT%H-%MZ").replace(tzinfo=dt.UTC)
            if now - delivered > MAX_AGE:
                raise InventoryUnusable(
                    f"the newest S3 Inventory under {destination} is from {stamp}, more than "
                    f"{MAX_AGE.days} days old"
                )
            try:
                body = s3.get_object(Bucket=bucket, Key=f"{prefix}{stamp}/manifest.json")["Body"]
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                    continue  # a delivery still being written: try the one before
                raise
            return _manifest(json.loads(body.read()), bucket, stamp, source_bucket, now)
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code, message = error.get("Code", "error"), error.get("Message", "")
        raise InventoryUnusable(f"could not read {destination}: {code}: {message}") from exc
    except BotoCoreError as exc:
        raise InventoryUnusable(f"could not read {destination}: {exc}") from exc
    except ValueError as exc:  # manifest.json is not JSON
        raise InventoryUnusable(f"unreadable manifest.json under {destination}: {exc}") from exc
    raise InventoryUnusable(f"no S3 Inventory manifest.json under {destination}")


def _manifest(
    doc: dict[str, Any], bucket: str, stamp: str, source_bucket: str, now: dt.datetime
) -> Manifest:
    where = f"s3://{bucket}/.../{stamp}/manifest.json"
    if doc.get("sourceBucket") != source_bucket:
        raise InventoryUnusable(
            f"{where} is the inventory of {doc.get('sourceBucket')!r}, not of {source_bucket!r}"
        )
    file_format = str(doc.get("fileFormat", ""))
    schema: tuple[str, ...] = ()
    if file_format.upper() == "CSV":
        schema = tuple(c.strip() for c in str(doc.get("fileSchema", "")).split(","))
        missing = [c for c in REQUIRED if c not in schema]
        if missing:
            raise InventoryUnusable(
                f"{where} lists no {' or '.join(missing)}: add them to the inventory's fields"
            )
    elif file_format.upper() not in ("ORC", "PARQUET"):
        raise InventoryUnusable(f"{where} has fileFormat {file_format!r}, not CSV, ORC or Parquet")
    created = dt.datetime.strptime(stamp, "%Y-%m-%dT%H-%MZ").replace(tzinfo=dt.UTC)
    if str(doc.get("creationTimestamp", "")).isdigit():
        created = dt.datetime.fromtimestamp(int(doc["creationTimestamp"]) / 1000, dt.UTC)
    if now - created > MAX_AGE:
        raise InventoryUnusable(f"{where} was created {created:%Y-%m-%d %H:%M} UTC, too old")
    files = tuple(str(f["key"]) for f in doc.get("files") or [])
    return Manifest(bucket, stamp, created, file_format.upper(), schema, files)


def inventory_objects(s3: Any, manifest: Manifest) -> Iterator[InventoryObject]:
    """Yield the current objects the manifest's files list, one file at a time."""
    for key in manifest.files:
        try:
            body = s3.get_object(Bucket=manifest.bucket, Key=key)["Body"]
            if manifest.file_format == "CSV":
                yield from _csv_objects(body, manifest.schema)
            else:
                with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
                    shutil.copyfileobj(body, spool)
                    spool.seek(0)
                    yield from _columnar_objects(spool, manifest.file_format)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise InventoryUnusable(
                f"could not read s3://{manifest.bucket}/{key}: {error.get('Code', 'error')}"
            ) from exc
        except (BotoCoreError, OSError, EOFError, ValueError, KeyError, TypeError) as exc:
            raise InventoryUnusable(f"unreadable s3://{manifest.bucket}/{key}: {exc}") from exc


def _csv_objects(body: IO[bytes], schema: tuple[str, ...]) -> Iterator[InventoryObject]:
    at = {name: i for i, name in enumerate(schema)}
    klass, latest, marker = at.get("StorageClass"), at.get("IsLatest"), at.get("IsDeleteMarker")
    with gzip.GzipFile(fileobj=body) as unzipped:
        for row in csv.reader(io.TextIOWrapper(unzipped, encoding="utf-8", newline="")):
            if not row:
                continue
            if latest is not None and row[latest].lower() == "false":
                continue
            if marker is not None and row[marker].lower() == "true":
                continue
            yield InventoryObject(
                key=unquote_plus(row[at["Key"]]),
                size=int(row[at["Size"]] or 0),
                storage_class=(row[klass] if klass is not None else "") or "STANDARD",
                last_modified=dt.datetime.fromisoformat(row[at["LastModifiedDate"]]),
            )


def _columnar_objects(spool: IO[bytes], file_format: str) -> Iterator[InventoryObject]:
    import pyarrow as pa

    batches: Iterator[pa.RecordBatch]
    if file_format == "PARQUET":
        import pyarrow.parquet as pq

        parquet = pq.ParquetFile(spool)
        names = set(parquet.schema_arrow.names)
        wanted = [c for c in COLUMNS.values() if c in names]
        batches = parquet.iter_batches(batch_size=BATCH_ROWS, columns=wanted)
    else:
        import pyarrow.orc as orc

        orc_file = orc.ORCFile(spool)
        names = set(orc_file.schema.names)
        wanted = [c for c in COLUMNS.values() if c in names]
        batches = (orc_file.read_stripe(i, columns=wanted) for i in range(orc_file.nstripes))
    missing = [name for name in REQUIRED if COLUMNS[name] not in names]
    if missing:
        raise ValueError(f"no {' or '.join(COLUMNS[m] for m in missing)} column")
    for batch in batches:
        cols = {name: batch.column(name).to_pylist() for name in batch.schema.names}
        for i in range(batch.num_rows):
            if "is_latest" in cols and cols["is_latest"][i] is False:
                continue
            if "is_delete_marker" in cols and cols["is_delete_marker"][i]:
                continue
            modified = cols["last_modified_date"][i]
            if modified is None:
                continue
            if modified.tzinfo is None:
                modified = modified.replace(tzinfo=dt.UTC)
            classes = cols.get("storage_class")
            yield InventoryObject(
                key=cols["key"][i],
                size=int(cols["size"][i] or 0),
                storage_class=(classes[i] if classes else None) or "STANDARD",
                last_modified=modified,
            )
