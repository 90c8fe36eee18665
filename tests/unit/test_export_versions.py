"""Which files of an export folder are read: the newest version of each billing period."""

from __future__ import annotations

from bot.ingest.sources.files import latest_versions


def test_newest_version_per_period_and_everything_else_kept() -> None:
    files = [
        # legacy CUR, a version per assembly id: the newest wins, with all its parts
        ("s3://b/cur/r/20261101-20261201/aaa/r-1.csv.gz", 10.0),
        ("s3://b/cur/r/20261101-20261201/bbb/r-1.csv.gz", 20.0),
        ("s3://b/cur/r/20261101-20261201/bbb/r-2.csv.gz", 15.0),
        ("s3://b/cur/r/20261001-20261101/aaa/r-1.csv.gz", 5.0),  # another month: kept
        # Data Exports overwriting one folder per period: every chunk is read
        ("s3://b/x/data/BILLING_PERIOD=2026-11/x-00001.snappy.parquet", 30.0),
        ("s3://b/x/data/BILLING_PERIOD=2026-11/x-00002.snappy.parquet", 31.0),
        # legacy CUR's Athena layout
        ("/exports/r/year=2026/month=11/r-00001.snappy.parquet", 1.0),
        # no billing-period folder: read as given
        ("s3://b/focus/2024-09/part-1.csv", 0.0),
    ]
    assert latest_versions(files) == sorted(
        [
            "s3://b/cur/r/20261101-20261201/bbb/r-1.csv.gz",
            "s3://b/cur/r/20261101-20261201/bbb/r-2.csv.gz",
            "s3://b/cur/r/20261001-20261101/aaa/r-1.csv.gz",
            "s3://b/x/data/BILLING_PERIOD=2026-11/x-00001.snappy.parquet",
            "s3://b/x/data/BILLING_PERIOD=2026-11/x-00002.snappy.parquet",
            "/exports/r/year=2026/month=11/r-00001.snappy.parquet",
            "s3://b/focus/2024-09/part-1.csv",
        ]
    )


def test_files_straight_in_the_period_folder_are_one_version() -> None:
    files = [
        ("s3://b/r/20261101-20261201/r-1.csv.gz", 50.0),  # an overwriting report
        ("s3://b/r/20261101-20261201/old/r-1.csv.gz", 10.0),  # a stale version folder
    ]
    assert latest_versions(files) == ["s3://b/r/20261101-20261201/r-1.csv.gz"]
