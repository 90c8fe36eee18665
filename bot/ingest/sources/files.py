"""Local paths and s3:// URIs for file-based sources."""

from __future__ import annotations

import datetime as dt
import logging
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from bot.errors import IngestError, aws_error_reason
from bot.ingest.sources.base import (
    DEFAULT_CURRENCY,
    GroupedCharges,
    Progress,
    RowError,
    SourceData,
    check_no_nul,
    source_data,
)

log = logging.getLogger(__name__)
# Partial groups held in memory before they go to disk (bot/ingest/sources/spill.py). Grouping
# them again (Arrow's hash group-by over some 20 text keys) takes several times their size at its
# peak: reading 1M generated CUR rows peaked at 540 MB of RSS with 250,000, 329 MB with 50,000.
SPILL_AFTER_GROUPS = 50_000


def is_s3(location: str) -> bool:
    """Return whether the location is an s3:// URI."""
    return location.startswith("s3://")


_DATA_SUFFIXES = (".csv", ".csv.gz", ".parquet")
# A folder that holds one billing period: Data Exports (BILLING_PERIOD=2026-11), legacy CUR
# (20261101-20261201), or legacy CUR's Athena layout (year=2026/month=11).
_PERIOD_FOLDERS = (
    re.compile(r"BILLING_PERIOD=(\d{4})-(\d{2})"),
    re.compile(r"(\d{4})(\d{2})01-\d{8}"),
)
_ATHENA_YEAR, _ATHENA_MONTH = re.compile(r"year=(\d{4})"), re.compile(r"month=(\d{1,2})")


def period_folder(location: str) -> tuple[int, dt.date] | None:
    """Return (index among the path's '/' parts, first day) of its billing-period folder."""
    parts = location.split("/")
    for at, part in enumerate(parts[:-1]):
        found = next((m for p in _PERIOD_FOLDERS if (m := p.fullmatch(part))), None)
        if found:
            year, month = int(found[1]), int(found[2])
        else:
            month_match = _ATHENA_MONTH.fullmatch(part)
            year_match = _ATHENA_YEAR.fullmatch(parts[at - 1]) if at else None
            if not (month_match and year_match):
                continue
            year, month = int(year_match[1]), int(month_match[1])
        if 1 <= month <= 12:
            return at, dt.date(year, month, 1)
    return None


def expand_locations(locations: list[str], s3_client: Any | None = None) -> list[str]:
    """Expand directories and s3 prefixes into the billing files they hold.

    Where an export keeps every version of a billing period (legacy CUR's "create new report
    version" puts each in a folder named by its assembly id), only the newest version is kept:
    they are copies of the same month, and reading them all would count it several times.
    """
    files: list[str] = []
    for location in locations:
        if is_s3(location):
            files.extend(latest_versions(_expand_s3(location, s3_client)))
            continue
        path = Path(location)
        if path.is_dir():
            found = sorted(
                (str(p), p.stat().st_mtime)
                for p in path.rglob("*")
                if p.is_file() and p.name.lower().endswith(_DATA_SUFFIXES)
            )
            if not found:
                raise IngestError(f"{location}: no .csv, .csv.gz or .parquet files in this folder")
            files.extend(latest_versions(found))
        elif path.exists():
            files.append(str(path))
        else:
            raise IngestError(f"{location}: no such file")
    return files


def latest_versions(files: list[tuple[str, float]]) -> list[str]:
    """Keep, in each billing-period folder, the files of its newest version folder only.

    `files` are (location, modified time). Files directly in a period folder are one version;
    each subfolder of it is another. Files outside any period folder are all kept.
    """
    kept: list[str] = []
    periods: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for location, modified in files:
        found = period_folder(location)
        if found is None:
            kept.append(location)
            continue
        at, parts = found[0], location.split("/")
        version = parts[at + 1] if at + 1 < len(parts) - 1 else ""
        periods.setdefault("/".join(parts[: at + 1]), {}).setdefault(version, []).append(
            (location, modified)
        )
    for period, versions in periods.items():
        newest = max(versions.values(), key=lambda group: max(m for _, m in group))
        if len(versions) > 1:
            log.warning(
                "%s holds %d versions of its billing period; reading the newest only",
                period,
                len(versions),
            )
        kept.extend(location for location, _ in newest)
    return sorted(kept)


def _expand_s3(uri: str, s3_client: Any | None) -> list[tuple[str, float]]:
    bucket, key = _split_s3(uri)
    if key and not key.endswith("/"):
        return [(uri, 0.0)]
    client = _s3(s3_client, uri)
    try:
        objects = []
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key):
            objects += [(o["Key"], o["LastModified"]) for o in page.get("Contents", [])]
    except Exception as exc:  # botocore raises many shapes; all mean "cannot list"
        raise IngestError(f"{uri}: cannot list the S3 prefix ({aws_error_reason(exc)})") from None
    files = [
        (f"s3://{bucket}/{k}", modified.timestamp())
        for k, modified in sorted(objects)
        if k.lower().endswith(_DATA_SUFFIXES)
    ]
    if not files:
        raise IngestError(f"{uri}: no billing files under this S3 prefix")
    return files


def _split_s3(uri: str) -> tuple[str, str]:
    parsed = urlparse(uri)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise IngestError(f"{uri}: not a valid s3://bucket/key URI")
    return parsed.netloc, parsed.path.lstrip("/")


def _s3(client: Any | None, location: str) -> Any:
    """Return the S3 client the caller handed in: whoever builds a source makes its clients."""
    if client is None:
        raise IngestError(f"{location}: no S3 client was given to read it with")
    return client


@contextmanager
def local_copy(location: str, s3_client: Any | None = None) -> Iterator[Path]:
    """Yield a local path for the location, streaming s3 objects to a temporary file."""
    if not is_s3(location):
        yield Path(location)
        return
    bucket, key = _split_s3(location)
    client = _s3(s3_client, location)
    suffix = "".join(Path(key).suffixes[-2:])
    with tempfile.TemporaryDirectory(prefix="mlcost-") as tmp:
        target = Path(tmp) / f"object{suffix}"
        try:
            client.download_file(bucket, key, str(target))
        except Exception as exc:
            raise IngestError(f"{location}: cannot download ({aws_error_reason(exc)})") from None
        yield target


def file_format(name: str) -> str:
    """Return 'parquet' or 'csv' from a file name."""
    lowered = name.lower()
    if lowered.endswith(".parquet") or lowered.endswith(".parquet.snappy"):
        return "parquet"
    if lowered.endswith((".csv", ".csv.gz", ".csv.zip", ".txt")):
        return "csv"
    raise IngestError(f"{name}: unknown file type; expected .csv, .csv.gz or .parquet")


def iter_batches(
    path: Path, columns_for: Any, batch_rows: int = 65_536, dictionary: bool = False
) -> Iterator[pa.Table]:
    """Yield tables of only the needed columns, by row group (Parquet) or block (CSV).

    `columns_for(names)` returns the column names to read given the file's header. A value with
    a NUL byte raises RowError (its row counted in the batch). With
    `dictionary`, Parquet string columns come dictionary-encoded as stored (no string copies);
    CSV columns are always plain strings.
    """
    fmt = file_format(path.name)
    try:
        if fmt == "parquet":
            schema = pq.read_schema(path)
            columns = columns_for(schema.names)
            strings = [
                c for c in columns if dictionary and pa.types.is_string(schema.field(c).type)
            ]
            parquet = pq.ParquetFile(path, read_dictionary=strings or None)
            # One thread: decoding a few columns is quick, and each decoding thread's allocator
            # heap kept about 50 MB of peak RSS for itself.
            batches = parquet.iter_batches(
                batch_size=batch_rows, columns=columns, use_threads=False
            )
            for batch in batches:
                table = pa.Table.from_batches([batch])
                check_no_nul(table)
                yield table
            return
        names = _csv_header(path)
        columns = columns_for(names)
        reader = pcsv.open_csv(
            pa.input_stream(str(path), compression="detect"),
            read_options=pcsv.ReadOptions(block_size=8 << 20),
            convert_options=pcsv.ConvertOptions(
                include_columns=columns,
                column_types={c: pa.string() for c in columns},
                null_values=["NULL", "null", ""],
                strings_can_be_null=True,
            ),
        )
        for batch in reader:
            table = pa.Table.from_batches([batch])
            check_no_nul(table)
            yield table
    except IngestError:
        raise
    except (pa.ArrowException, OSError, EOFError, ValueError) as exc:
        raise IngestError(
            f"{path.name}: unreadable or truncated file ({_first_line(exc)})"
        ) from None


def _csv_header(path: Path) -> list[str]:
    try:
        reader = pcsv.open_csv(
            pa.input_stream(str(path), compression="detect"),
            read_options=pcsv.ReadOptions(block_size=1 << 16),
            convert_options=pcsv.ConvertOptions(include_columns=[]),
        )
        return list(reader.schema.names)
    except (pa.ArrowException, OSError, EOFError) as exc:
        raise IngestError(f"{path.name}: not a readable CSV file ({_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


class FileSource:
    """A source over billing files, local or s3://: each file is read batch by batch.

    A subclass says which column carries the billing currency and turns one file's batches into
    canonical charges; a charge without a currency is counted in `default_currency`.
    """

    kind: str
    currency_field: str
    # Whether each batch's charges are already grouped (they then stand for more rows).
    grouped_batches = False

    def __init__(
        self,
        locations: list[str],
        s3_client: Any | None = None,
        *,
        default_currency: str = DEFAULT_CURRENCY,
    ) -> None:
        self.locations = locations
        self.location = " ".join(locations)
        self._s3 = s3_client
        self.default_currency = default_currency

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        """Read every file the locations name into grouped charges."""
        grouped = GroupedCharges(
            default_currency=self.default_currency,
            currency_field=self.currency_field,
            spill_after=SPILL_AFTER_GROUPS,
        )
        try:
            empty = self._read_files(grouped, tag_keys, progress)
        except BaseException:
            grouped.discard()  # what went to disk goes now, not when collected
            raise
        data = source_data(grouped)
        data.notes.extend(
            f"{where} has a header but no rows; nothing was read from it" for where in empty
        )
        return data

    def _read_files(
        self, grouped: GroupedCharges, tag_keys: set[str], progress: Progress | None
    ) -> list[str]:
        """Add every file's charges to `grouped`; return the files that had no rows."""
        empty: list[str] = []
        locations = expand_locations(self.locations, self._s3)
        if progress is not None:
            progress.set_total(len(locations), "files")
        for location in locations:
            with local_copy(location, self._s3) as path:
                read = 0
                try:
                    for rows, charges in self.file_charges(path, tag_keys):
                        grouped.add(charges, rows=rows if self.grouped_batches else None)
                        read += rows
                        if progress is not None:
                            progress.advance(rows=rows)
                except RowError as exc:  # its row counts from the start of its batch
                    where = None if exc.row is None else read + exc.row + 1
                    message = exc.describe(where)
                    raise IngestError(f"{location}: {message}{self.read_as()}") from None
                except IngestError as exc:
                    message = str(exc).removeprefix(path.name + ": ")
                    raise IngestError(f"{location}: {message}{self.read_as()}") from None
                if not read:
                    empty.append(location)
            if progress is not None:
                progress.advance(1)
        return empty

    def read_as(self) -> str:
        """Return what an error in the current file adds after its message ("" or "; ...")."""
        return ""

    def file_charges(self, path: Path, tag_keys: set[str]) -> Iterator[tuple[int, pa.Table]]:
        """Yield each batch's count of rows read with its canonical charges."""
        raise NotImplementedError
