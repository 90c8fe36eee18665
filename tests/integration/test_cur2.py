"""CUR 2.0 (Data Exports): snake_case columns and tags in a `resource_tags` map column."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.ledger import ingest
from bot.models import DailySpend
from bot.sources.cur import CurSource
from tests.helpers import load_registry


def write_cur2(path: Path) -> None:
    start = dt.datetime(2026, 11, 3, 5, tzinfo=dt.UTC)
    table = pa.table({
        "bill_billing_period_start_date": pa.array([dt.datetime(2026, 11, 1, tzinfo=dt.UTC)] * 3,
                                                   pa.timestamp("ms", "UTC")),
        "bill_payer_account_id": ["111122223333"] * 3,
        "line_item_usage_account_id": ["444455556666"] * 3,
        "line_item_usage_start_date": pa.array([start] * 3, pa.timestamp("ms", "UTC")),
        "line_item_product_code": ["AmazonSageMaker", "AmazonEC2", "AmazonS3"],
        "product_product_name": ["Amazon SageMaker", None, "Amazon Simple Storage Service"],
        "line_item_usage_type": ["USE1-Train:ml.p4d.24xlarge", "USE1-BoxUsage:g5.xlarge",
                                 "USE1-TimedStorage-ByteHrs"],
        "line_item_resource_id": ["arn:train-1", "i-abc", "arn:aws:s3:::ckpt"],
        "product_instance_type": ["ml.p4d.24xlarge", "g5.xlarge", None],
        "line_item_line_item_type": ["Usage", "SavingsPlanCoveredUsage", "Usage"],
        "pricing_unit": ["Hrs", "Hrs", "GB-Mo"],
        "line_item_unblended_cost": [65.5452, 1.006, 0.023],
        "savings_plan_savings_plan_effective_cost": [0.0, 0.7, 0.0],
        "line_item_usage_amount": [2.0, 1.0, 1.0],
        "resource_tags": pa.array(
            [[("user_ml_model", "recsys"), ("user_ml_stage", "training")],
             [("user_ml_model", "recsys")],
             []],
            pa.map_(pa.string(), pa.string()),
        ),
    })  # fmt: skip
    pq.write_table(table, path)


def test_cur2_map_tags_savings_plans_and_gpu_hours(session: Session, tmp_path: Path) -> None:
    load_registry(session)
    path = tmp_path / "cur2-00001.snappy.parquet"
    write_cur2(path)
    report = ingest(CurSource([str(path)]), session=session)
    assert report.billed_total == Decimal("66.5742")
    assert report.effective_total == Decimal("66.2682")
    assert report.attributed_total == Decimal("66.5512")
    rows = {r.resource_id: r for r in session.scalars(select(DailySpend))}
    assert rows["arn:train-1"].model == "recsys"
    assert rows["arn:train-1"].stage == "training"
    assert rows["arn:train-1"].gpu_hours == Decimal(16)
    assert rows["i-abc"].service == "AmazonEC2"
    assert rows["i-abc"].effective_cost == Decimal("0.7")
    assert rows["arn:aws:s3:::ckpt"].model is None
    assert rows["arn:aws:s3:::ckpt"].stage == "storage"
    assert rows["arn:train-1"].billing_period == dt.date(2026, 11, 1)
