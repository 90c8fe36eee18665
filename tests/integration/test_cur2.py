"""CUR 2.0 (Data Exports): snake_case columns and tags in a `resource_tags` map column."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend
from bot.ingest.attribution import normalize_tag_key
from bot.ingest.ledger import ingest
from bot.ingest.sources.cur import CurSource, value_from_map
from tests.support.sample_registry import load_registry


def write_cur2(path: Path) -> None:
    start = dt.datetime(2026, 11, 3, 5, tzinfo=dt.UTC)
    table = pa.table(
        {
            "bill_billing_period_start_date": pa.array(
                [dt.datetime(2026, 11, 1, tzinfo=dt.UTC)] * 3, pa.timestamp("ms", "UTC")
            ),
            "bill_payer_account_id": ["111122223333"] * 3,
            "line_item_usage_account_id": ["444455556666"] * 3,
            "line_item_usage_start_date": pa.array([start] * 3, pa.timestamp("ms", "UTC")),
            "line_item_product_code": ["AmazonSageMaker", "AmazonEC2", "AmazonS3"],
            "product_product_name": ["Amazon SageMaker", None, "Amazon Simple Storage Service"],
            "line_item_usage_type": [
                "USE1-Train:ml.p4d.24xlarge",
                "USE1-BoxUsage:g5.xlarge",
                "USE1-TimedStorage-ByteHrs",
            ],
            "line_item_resource_id": ["arn:train-1", "i-abc", "arn:aws:s3:::ckpt"],
            "product_instance_type": ["ml.p4d.24xlarge", "g5.xlarge", None],
            "line_item_line_item_type": ["Usage", "SavingsPlanCoveredUsage", "Usage"],
            "pricing_unit": ["Hrs", "Hrs", "GB-Mo"],
            "line_item_unblended_cost": [65.5452, 1.006, 0.023],
            "savings_plan_savings_plan_effective_cost": [0.0, 0.7, 0.0],
            "line_item_usage_amount": [2.0, 1.0, 1.0],
            "resource_tags": pa.array(
                [
                    [("user_ml_model", "recsys"), ("user_ml_stage", "training")],
                    [("user_ml_model", "recsys")],
                    [],
                ],
                pa.map_(pa.string(), pa.string()),
            ),
        }
    )
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


def test_map_tags_are_picked_like_a_row_by_row_reading() -> None:
    """The vectorised map lookup agrees with the plain Python reading it replaced."""
    rng = random.Random(3)
    keys = ["user_ml_model", "user:ml:model", "user_MlModel", "user_team", "aws_created_by", None]
    rows: list[list[tuple[str, str | None]] | None] = []
    for _ in range(2_000):
        if rng.random() < 0.1:
            rows.append(None)
            continue
        entries = []
        for _ in range(rng.randint(0, 4)):
            key = rng.choice(keys[:-1])
            entries.append((key, rng.choice([None, "recsys", "search", "Ads CTR"])))
        rows.append(entries)
    column = pa.chunked_array(
        [
            pa.array(rows[:700], pa.map_(pa.string(), pa.string())),
            pa.array(rows[700:], pa.map_(pa.string(), pa.string())).slice(0),
        ]
    )

    def reference(key: str) -> list[str]:
        found = []
        for entry in rows:
            value = ""
            for k, v in entry or []:
                if normalize_tag_key(k.removeprefix("user_").removeprefix("user:")) == key:
                    value = v or ""
                    break
            found.append(value)
        return found

    for key in ("ml_model", "team", "missing"):
        assert value_from_map(column, key, len(rows)).to_pylist() == reference(key), key
    sliced = pa.array(rows, pa.map_(pa.string(), pa.string())).slice(500, 700)
    assert value_from_map(sliced, "ml_model", 700).to_pylist() == reference("ml_model")[500:1200]


def test_cur2_product_name_from_the_product_map(session: Session, tmp_path: Path) -> None:
    """CUR 2.0 without product_product_name: the name comes from the `product` map."""
    path = tmp_path / "cur2-00001.snappy.parquet"
    write_cur2(path)
    table = pq.read_table(path).drop(["product_product_name"])
    product = pa.array(
        [
            [("product_name", "Amazon SageMaker"), ("region", "us-east-1")],
            [("region", "us-east-1")],  # no name: the product code stands in
            None,
        ],
        pa.map_(pa.string(), pa.string()),
    )
    pq.write_table(table.append_column("product", product), path)
    ingest(CurSource([str(path)]), session=session)
    services = {r.resource_id: r.service for r in session.scalars(select(DailySpend))}
    assert services == {
        "arn:train-1": "Amazon SageMaker",
        "i-abc": "AmazonEC2",
        "arn:aws:s3:::ckpt": "AmazonS3",
    }
