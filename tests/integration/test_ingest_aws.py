"""Cost Explorer (Stubber), Athena and S3 (moto) ingestion."""

from __future__ import annotations

import copy
import datetime as dt
import json
from decimal import Decimal

import boto3
import pytest
import requests
from botocore.stub import ANY, Stubber
from moto import mock_aws
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend
from bot.errors import IngestError
from bot.ingest.ledger import ingest
from bot.ingest.sources.athena import AthenaSource, build_query
from bot.ingest.sources.cost_explorer import CostExplorerSource
from bot.ingest.sources.focus import FocusSource
from tests.conftest import DATA
from tests.support.ledger import assert_rollup_matches_ledger, ledger_totals
from tests.support.sample_registry import load_registry

HUBS = json.loads((DATA / "test_query_total_costs_per_hub-input.json").read_text())
SERVICES = json.loads((DATA / "test_data_cost_component_all.json").read_text())
CLI_EXAMPLE = json.loads((DATA / "get-cost-and-usage.output.json").read_text())


def ce_client() -> object:
    return boto3.client("ce", region_name="us-east-1")


def pages(response: dict, size: int) -> list[dict]:
    """Split one real response into pages chained by NextPageToken."""
    results = response["ResultsByTime"]
    out = []
    for i in range(0, len(results), size):
        page = {k: v for k, v in response.items() if k not in ("ResponseMetadata",)}
        page = copy.deepcopy(page)
        page["ResultsByTime"] = results[i : i + size]
        if i + size < len(results):
            page["NextPageToken"] = f"token-{i + size}"
        out.append(page)
    return out


def expected_total(response: dict, keys: list[str] | None = None) -> Decimal:
    """Sum the response's unblended cost over its groups (only those with `keys` if given)."""
    return sum(
        (
            Decimal(g["Metrics"]["UnblendedCost"]["Amount"])
            for r in response["ResultsByTime"]
            for g in r["Groups"]
            if keys is None or g["Keys"] == keys
        ),
        Decimal(0),
    )


def test_cost_explorer_paginates_counts_requests_and_keeps_untagged(session: Session) -> None:
    load_registry(session)
    client = ce_client()
    split = pages(HUBS, 3)
    assert len(split) == 3
    with Stubber(client) as stub:
        for i, page in enumerate(split):
            expected = {
                "TimePeriod": {"Start": "2026-06-20", "End": "2026-06-28"},
                "Granularity": "DAILY",
                "Metrics": ANY,
                "GroupBy": ANY,
            }
            if i:
                expected["NextPageToken"] = split[i - 1]["NextPageToken"]
            stub.add_response("get_cost_and_usage", page, expected)
        source = CostExplorerSource(
            client,
            dt.date(2026, 6, 20),
            dt.date(2026, 6, 28),
            model_tag_key="2i2c:hub-name",
            billing_account="acct-1",
        )
        report = ingest(source, session=session)
        stub.assert_no_pending_responses()
    assert report.api_requests == 3
    assert report.reconciled
    assert report.billed_total == expected_total(HUBS)
    untagged = expected_total(HUBS, ["2i2c:hub-name$"])
    assert untagged > 0
    assert report.unallocated_total == untagged + expected_total(HUBS, ["2i2c:hub-name$binder"])
    prod = session.scalar(
        select(func.sum(DailySpend.billed_cost)).where(DailySpend.model == "prod")
    )
    assert prod and prod > 0


def test_overlapping_polls_replace_restated_days(session: Session) -> None:
    client = ce_client()
    restated = copy.deepcopy(SERVICES)
    for result in restated["ResultsByTime"]:
        for group in result["Groups"]:
            amount = Decimal(group["Metrics"]["UnblendedCost"]["Amount"])
            group["Metrics"]["UnblendedCost"]["Amount"] = str(amount * 2)
    start, end = dt.date(2025, 9, 1), dt.date(2025, 9, 3)
    with Stubber(client) as stub:
        stub.add_response("get_cost_and_usage", SERVICES)
        stub.add_response("get_cost_and_usage", restated)
        first = ingest(
            CostExplorerSource(client, start, end, model_tag_key="ml:model", billing_account="a"),
            session=session,
        )
        estimated = session.scalar(select(func.count()).where(DailySpend.estimated.is_(True)))
        assert estimated and estimated > 0
        second = ingest(
            CostExplorerSource(client, start, end, model_tag_key="ml:model", billing_account="a"),
            session=session,
        )
    assert second.billed_total == first.billed_total * 2
    assert ledger_totals(session)[0] == second.billed_total
    assert_rollup_matches_ledger(session)


def test_aws_cli_example_groups_by_service_and_tag(session: Session) -> None:
    client = ce_client()
    with Stubber(client) as stub:
        stub.add_response("get_cost_and_usage", CLI_EXAMPLE)
        report = ingest(
            CostExplorerSource(
                client,
                dt.date(2017, 9, 1),
                dt.date(2017, 10, 1),
                model_tag_key="Environment",
                second_group="SERVICE",
            ),
            session=session,
        )
    assert report.billed_total == expected_total(CLI_EXAMPLE)
    services = set(session.scalars(select(DailySpend.service).distinct()))
    assert "Amazon Simple Storage Service" in services
    stages = set(session.scalars(select(DailySpend.stage).distinct()))
    assert "storage" in stages


def test_cost_explorer_throttling_is_a_clear_error(session: Session) -> None:
    client = ce_client()
    with Stubber(client) as stub:
        stub.add_client_error(
            "get_cost_and_usage",
            service_error_code="LimitExceededException",
            service_message="Rate exceeded",
            http_status_code=429,
        )
        with pytest.raises(IngestError, match="LimitExceededException"):
            ingest(
                CostExplorerSource(
                    client, dt.date(2026, 1, 1), dt.date(2026, 1, 2), model_tag_key="ml:model"
                ),
                session=session,
            )
    assert ledger_totals(session)[2] == 0


@mock_aws
def test_focus_from_s3_and_bad_s3_urls(session: Session) -> None:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="billing")
    s3.put_object(
        Bucket="billing",
        Key="focus/2024-09/part-1.csv",
        Body=(DATA / "focus_sample.csv").read_bytes(),
    )
    report = ingest(FocusSource(["s3://billing/focus/"], s3_client=s3), session=session)
    assert report.rows_read == 1000 and report.reconciled
    with pytest.raises(IngestError, match=r"s3://billing/missing\.csv: cannot download"):
        FocusSource(["s3://billing/missing.csv"], s3_client=s3).read(set())
    with pytest.raises(IngestError, match="s3://nobucket/x/: cannot list"):
        FocusSource(["s3://nobucket/x/"], s3_client=s3).read(set())
    with pytest.raises(IngestError, match="not a valid s3://bucket/key URI"):
        FocusSource(["s3:///nokey"], s3_client=s3).read(set())


def test_athena_query_pushes_grouping_down() -> None:
    sql = build_query("cur", "cur_table", "2026-11", {"ml_model": "resource_tags_user_ml_model"})
    assert "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12" in sql
    assert "timestamp '2026-11-01 00:00:00'" in sql
    with pytest.raises(IngestError, match="identifier"):
        build_query("cur; DROP", "t", "2026-11", {})


@mock_aws
def test_athena_results_are_ingested(session: Session) -> None:
    load_registry(session)
    header = [
        "day",
        "billing_period",
        "billing_account",
        "sub_account",
        "service",
        "usage_type",
        "region",
        "resource_id",
        "instance_type",
        "line_item_type",
        "unit",
        "tag_ml_model",
        "billed",
        "effective",
        "quantity",
    ]
    rows = [
        [
            "2026-11-01",
            "2026-11-01",
            "111",
            "222",
            "Amazon SageMaker",
            "USE1-Train:ml.p4d.24xlarge",
            "us-east-1",
            "arn:train/1",
            "ml.p4d.24xlarge",
            "Usage",
            "Hrs",
            "recsys",
            "812.5",
            "700.25",
            "2",
        ],
        [
            "2026-11-02",
            "2026-11-01",
            "111",
            "222",
            "Amazon EC2",
            "USE1-BoxUsage:m5.large",
            "us-east-1",
            "i-1",
            "m5.large",
            "Usage",
            "Hrs",
            "",
            "10.125",
            "10.125",
            "24",
        ],
    ]

    def cell(v: str) -> dict:
        return {"VarCharValue": v}

    results = {
        "results": [
            {
                "rows": [{"Data": [cell(h) for h in header]}]
                + [{"Data": [cell(v) for v in r]} for r in rows],
                "column_info": [{"Name": h, "Type": "varchar"} for h in header],
            }
        ],
        "region": "us-east-1",
    }
    resp = requests.post(
        "http://motoapi.amazonaws.com/moto-api/static/athena/query-results", json=results, timeout=5
    )
    assert resp.status_code == 201
    athena = boto3.client("athena", region_name="us-east-1")
    source = AthenaSource(
        athena,
        database="cur",
        table="cur_table",
        month="2026-11",
        output="s3://results/",
        sleep=lambda s: None,
    )
    report = ingest(source, session=session)
    assert report.billed_total == Decimal("822.625")
    assert report.attributed_total == Decimal("812.5")
    assert report.api_requests >= 3
    row = session.scalars(select(DailySpend).where(DailySpend.model == "recsys")).one()
    assert (row.stage, row.gpu_hours) == ("training", Decimal(16))
