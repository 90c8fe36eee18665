"""Training runs carried by every source into the ledger, checked against the raw files."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend
from bot.ingest.ledger import ingest
from bot.ingest.sources.athena import build_query
from bot.ingest.sources.cost_explorer import CostExplorerSource
from bot.ingest.sources.cur import CurSource
from bot.ingest.sources.focus import FocusSource
from bot.registry.stored import load_attribution_rules
from tests.conftest import DATA
from tests.support.ledger import assert_rollup_matches_ledger
from tests.support.sample_registry import REGISTRY, load_registry

FOCUS = DATA / "focus_sample.csv"
CUR_NOV = DATA / "Nov2018-WorkshopCUR-00001.snappy.parquet"
JOB_ARN = "arn:aws:sagemaker:us-west-2:123456789012:training-job/bp-nightly-0917"
# the sample registry, declaring a second run tag key: CUR's `resource_tags_user_name` column
DECLARED = REGISTRY.replace(
    "  team_tag_keys: [team]\n", '  team_tag_keys: [team]\n  run_tag_keys: ["ml:run", Name]\n'
)


def ledger_runs(session: Session) -> dict[str | None, Decimal]:
    rows = session.execute(
        select(DailySpend.run, func.sum(DailySpend.billed_cost)).group_by(DailySpend.run)
    )
    return {run: Decimal(total) for run, total in rows}


def decimal_sum(values: Any) -> Decimal:
    return sum((Decimal(str(v)) for v in values), Decimal(0))


def focus_with_runs(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    """The real FOCUS sample with an `ml:run` tag on BrightPathMatrix rows and one job ARN."""
    frame = pd.read_csv(FOCUS, dtype=str, keep_default_na=False)
    tagged = frame["Tags"].str.contains("BrightPathMatrix")
    frame.loc[tagged, "Tags"] = [
        json.dumps({**json.loads(t), "ml:run": "bp-sweep-3"}) for t in frame.loc[tagged, "Tags"]
    ]
    untagged = frame.index[(frame["Tags"] == "NULL") & (frame["ProviderName"] == "AWS")][:5]
    frame.loc[untagged, "ResourceId"] = JOB_ARN
    path = tmp_path / "focus-runs.csv"
    frame.to_csv(path, index=False)
    frame["run"] = None
    frame.loc[tagged, "run"] = "bp-sweep-3"
    frame.loc[untagged, "run"] = "bp-nightly-0917"
    return path, frame


def test_focus_carries_the_run_tag_and_the_training_job_arn(
    session: Session, tmp_path: Path
) -> None:
    load_registry(session)
    path, frame = focus_with_runs(tmp_path)
    report = ingest(FocusSource([str(path)]), session=session)
    assert report.reconciled

    billed = frame["BilledCost"].replace("NULL", "0")
    expected = {
        run: decimal_sum(billed[frame["run"] == run]) for run in ("bp-sweep-3", "bp-nightly-0917")
    }
    found = ledger_runs(session)
    for run, total in expected.items():
        assert total > 0
        assert abs(found[run] - total) < Decimal("1e-8"), run  # 11 places in, 10 kept
    assert abs(sum(found.values(), Decimal(0)) - decimal_sum(billed)) < Decimal("1e-8")
    # the run is one more ledger key: the tagged rows keep their model, the rollup its sums
    models = set(session.scalars(select(DailySpend.model).where(DailySpend.run == "bp-sweep-3")))
    assert models == {"brightpath"}
    assert_rollup_matches_ledger(session)


def test_real_cur_carries_a_registry_declared_run_tag_column(session: Session) -> None:
    """`run_tag_keys: [ml:run, Name]` makes CUR read resource_tags_user_name as the run."""
    load_registry(session, DECLARED)
    assert "name" in load_attribution_rules(session).tag_keys_used()
    report = ingest(CurSource([str(CUR_NOV)]), session=session)
    assert report.reconciled

    raw = pq.read_table(
        CUR_NOV, columns=["resource_tags_user_name", "line_item_unblended_cost"]
    ).to_pandas()
    names = raw["resource_tags_user_name"].fillna("")
    expected = {
        name: decimal_sum(group["line_item_unblended_cost"])
        for name, group in raw.groupby(names)
        if name
    }
    assert set(expected) == {"JumpBox", "Glue Notebook"}
    found = ledger_runs(session)
    assert set(found) == {*expected, None}
    for name, total in expected.items():
        assert abs(found[name] - total) < Decimal("1e-6"), name  # float costs, parsed exactly
    assert abs(sum(found.values(), Decimal(0)) - report.billed_total) == 0


def test_cur2_reads_the_run_from_its_resource_tags_map(session: Session, tmp_path: Path) -> None:
    load_registry(session)
    start = dt.datetime(2026, 11, 3, 5, tzinfo=dt.UTC)
    table = pa.table(
        {
            "bill_billing_period_start_date": pa.array(
                [dt.datetime(2026, 11, 1, tzinfo=dt.UTC)] * 3, pa.timestamp("ms", "UTC")
            ),
            "bill_payer_account_id": ["111122223333"] * 3,
            "line_item_usage_start_date": pa.array([start] * 3, pa.timestamp("ms", "UTC")),
            "line_item_product_code": ["AmazonSageMaker"] * 3,
            "line_item_usage_type": ["USE1-Train:ml.p4d.24xlarge"] * 3,
            "line_item_resource_id": ["arn:train-1", JOB_ARN, "arn:train-3"],
            "line_item_unblended_cost": [65.5, 20.25, 1.0],
            "resource_tags": pa.array(
                [[("user_ml_model", "recsys"), ("user_ml_run", "sweep-42")], [], []],
                pa.map_(pa.string(), pa.string()),
            ),
        }
    )
    path = tmp_path / "cur2.parquet"
    pq.write_table(table, path)
    ingest(CurSource([str(path)]), session=session)
    assert ledger_runs(session) == {
        "sweep-42": Decimal("65.5"),
        "bp-nightly-0917": Decimal("20.25"),
        None: Decimal("1.0"),
    }


class _OnePage:
    """A Cost Explorer client answering one page grouped by the model and the run tags."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def get_cost_and_usage(self, **params: Any) -> dict[str, Any]:
        self.asked.append(params)

        def group(model: str, run: str, amount: str) -> dict[str, Any]:
            cost = {"Amount": amount, "Unit": "USD"}
            return {
                "Keys": [f"ml:model${model}", f"ml:run${run}"],
                "Metrics": {
                    "UnblendedCost": cost,
                    "AmortizedCost": cost,
                    "UsageQuantity": {"Amount": "1", "Unit": "N/A"},
                },
            }

        return {
            "GroupDefinitions": [
                {"Type": "TAG", "Key": "ml:model"},
                {"Type": "TAG", "Key": "ml:run"},
            ],
            "ResultsByTime": [
                {
                    "TimePeriod": {"Start": "2026-11-18", "End": "2026-11-19"},
                    "Groups": [
                        group("recsys", "sweep-42", "812.50"),
                        group("recsys", "", "100.25"),  # CE's "no tag value" key
                    ],
                    "Estimated": False,
                }
            ],
        }


def test_cost_explorer_carries_the_run_when_grouped_by_the_run_tag(session: Session) -> None:
    load_registry(session)
    client = _OnePage()
    source = CostExplorerSource(
        client,
        dt.date(2026, 11, 18),
        dt.date(2026, 11, 19),
        model_tag_key="ml:model",
        second_group="TAG:ml:run",
    )
    ingest(source, session=session)
    assert client.asked[0]["GroupBy"][1] == {"Type": "TAG", "Key": "ml:run"}
    assert ledger_runs(session) == {"sweep-42": Decimal("812.50"), None: Decimal("100.25")}


def test_athena_selects_the_run_tag_columns_attribution_reads(session: Session) -> None:
    load_registry(session, DECLARED)
    from bot.ingest.sources.athena import AthenaSource

    source = AthenaSource(None, database="cur", table="t", month="2026-11", output="s3://o/")
    columns = source.tag_columns(load_attribution_rules(session).tag_keys_used())
    assert columns["ml_run"] == "resource_tags_user_ml_run"
    assert columns["name"] == "resource_tags_user_name"
    sql = build_query("cur", "t", "2026-11", columns)
    assert "coalesce(resource_tags_user_ml_run, '') AS \"tag_ml_run\"" in sql
