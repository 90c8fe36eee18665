"""Polling a CUR 2.0 export in S3: only the previous and current billing periods are re-read."""

from __future__ import annotations

import datetime as dt
import io
import logging
import time

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from moto import mock_aws
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.schema import DailySpend
from bot.errors import IngestError, MlcostError
from bot.ingest.ledger import ingest
from bot.ingest.sources.exports import RecentExportSource, export_period, recent_periods
from bot.notify.sources import configured_sources
from tests.support.ledger import assert_rollup_matches_ledger
from tests.support.sample_registry import load_registry


def cur2_month(period: dt.date, cost: float) -> bytes:
    """One CUR 2.0 Parquet file: a day of recsys training in the given billing period."""
    start = dt.datetime.combine(period + dt.timedelta(days=1), dt.time(5), dt.UTC)
    table = pa.table(
        {
            "bill_billing_period_start_date": pa.array(
                [dt.datetime.combine(period, dt.time(), dt.UTC)], pa.timestamp("ms", "UTC")
            ),
            "bill_payer_account_id": ["111122223333"],
            "line_item_usage_account_id": ["444455556666"],
            "line_item_usage_start_date": pa.array([start], pa.timestamp("ms", "UTC")),
            "line_item_product_code": ["AmazonEC2"],
            "product_product_name": ["Amazon Elastic Compute Cloud"],
            "line_item_usage_type": ["USE1-BoxUsage:g5.xlarge"],
            "line_item_resource_id": ["i-abc"],
            "product_instance_type": ["g5.xlarge"],
            "line_item_line_item_type": ["Usage"],
            "pricing_unit": ["Hrs"],
            "line_item_unblended_cost": [cost],
            "line_item_usage_amount": [1.0],
            "resource_tags": pa.array(
                [[("user_ml_model", "recsys")]], pa.map_(pa.string(), pa.string())
            ),
        }
    )
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def test_billing_periods_in_export_paths() -> None:
    assert export_period("s3://b/p/x/data/BILLING_PERIOD=2026-11/x-00001.snappy.parquet") == (
        dt.date(2026, 11, 1)
    )
    assert export_period("s3://b/cur/report/20261101-20261201/report-1.csv.gz") == dt.date(
        2026, 11, 1
    )
    assert export_period("s3://b/cur/report/year=2026/month=2/part.parquet") == dt.date(2026, 2, 1)
    assert export_period("s3://b/cur/BILLING_PERIOD=2026-13/x.parquet") is None
    assert export_period("s3://b/focus/part-1.csv") is None
    assert recent_periods(dt.date(2026, 1, 3)) == [dt.date(2025, 12, 1), dt.date(2026, 1, 1)]


@mock_aws
def test_a_poll_rereads_the_previous_and_current_billing_periods(
    session: Session, caplog: pytest.LogCaptureFixture
) -> None:
    load_registry(session)
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="billing")
    root = "exports/mlcost-cur2/"
    for period, cost in (
        (dt.date(2026, 10, 1), 10.0),
        (dt.date(2026, 11, 1), 20.0),
        (dt.date(2026, 12, 1), 30.0),
    ):
        key = f"{root}data/BILLING_PERIOD={period:%Y-%m}/mlcost-cur2-00001.snappy.parquet"
        s3.put_object(Bucket="billing", Key=key, Body=cur2_month(period, cost))
        manifest = f"{root}metadata/BILLING_PERIOD={period:%Y-%m}/m-Manifest.json"
        s3.put_object(Bucket="billing", Key=manifest, Body=b"{}")
    settings = Settings(MLCOST_POLL_SOURCES=f"CUR:s3://billing/{root}")
    (source,) = configured_sources(
        settings, dt.date(2026, 12, 2), model_tag_key="ml:model", s3_client=s3
    )
    assert source.location == f"s3://billing/{root} (billing periods 2026-11, 2026-12)"

    report = ingest(source, session=session)
    periods = sorted(set(session.scalars(select(DailySpend.billing_period))))
    assert periods == [dt.date(2026, 11, 1), dt.date(2026, 12, 1)]
    assert report.billed_total == 50
    again = ingest(source, session=session)  # the next poll replaces, never doubles
    assert again.replaced_rows == report.rows_written
    assert_rollup_matches_ledger(session)

    # a file that names no billing period is read by every poll, and the log says so
    s3.put_object(
        Bucket="billing", Key=f"{root}loose.parquet", Body=cur2_month(dt.date(2026, 9, 1), 5.0)
    )
    with caplog.at_level(logging.WARNING, logger="bot.ingest.sources.exports"):
        assert (
            len(
                RecentExportSource(
                    "cur",
                    f"s3://billing/{root}",
                    recent_periods(dt.date(2026, 12, 2)),
                    s3_client=s3,
                ).files()
            )
            == 3
        )
    assert "1 file(s) name no billing period" in caplog.text

    early = RecentExportSource(
        "cur",
        f"s3://billing/{root}data/BILLING_PERIOD=2026-10/",
        recent_periods(dt.date(2027, 3, 1)),
        s3_client=s3,
    )
    with pytest.raises(IngestError, match="no export files for these billing periods yet"):
        early.read(set())


def test_poll_source_specs_keep_the_location_and_refuse_what_cannot_be_polled() -> None:
    settings = Settings(MLCOST_POLL_SOURCES=" cost-explorer , focus:s3://Bucket/Focus/ ,")
    assert settings.poll_source_specs() == [
        ("cost-explorer", None),
        ("focus", "s3://Bucket/Focus/"),
    ]
    for bad in ("athena", "cur", "cost-explorer:s3://x/"):
        with pytest.raises(MlcostError, match="MLCOST_POLL_SOURCES: cannot poll"):
            configured_sources(
                Settings(MLCOST_POLL_SOURCES=bad), dt.date(2026, 12, 2), model_tag_key="ml:model"
            )


@mock_aws
def test_s3_versions_of_a_month_are_read_newest_only(session: Session) -> None:
    load_registry(session)
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="billing")
    month = "cur/report/20261101-20261201"
    s3.put_object(
        Bucket="billing",
        Key=f"{month}/asm-old/report-1.snappy.parquet",
        Body=cur2_month(dt.date(2026, 11, 1), 20.0),
    )
    time.sleep(1.1)  # S3 times objects to the second
    s3.put_object(
        Bucket="billing",
        Key=f"{month}/asm-new/report-1.snappy.parquet",
        Body=cur2_month(dt.date(2026, 11, 1), 25.0),
    )
    source = RecentExportSource(
        "cur", "s3://billing/cur/", recent_periods(dt.date(2026, 12, 2)), s3_client=s3
    )
    assert source.files() == [f"s3://billing/{month}/asm-new/report-1.snappy.parquet"]
    assert ingest(source, session=session).billed_total == 25
