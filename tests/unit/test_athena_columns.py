"""The Athena query names only the columns its CUR table has (old CURs lack some)."""

from __future__ import annotations

import re
from typing import Any

import boto3
from botocore.stub import ANY, Stubber

from bot.ingest.sources.athena import AthenaSource

# a CUR table from before the account had Savings Plans or reservations, without resource IDs
OLD_CUR = [
    "identity_line_item_id",
    "bill_billing_period_start_date",
    "bill_payer_account_id",
    "line_item_usage_account_id",
    "line_item_line_item_type",
    "line_item_usage_start_date",
    "line_item_product_code",
    "line_item_usage_type",
    "line_item_usage_amount",
    "line_item_currency_code",
    "line_item_unblended_cost",
    "product_product_name",
    "product_region",
    "product_instance_type",
    "pricing_unit",
    "resource_tags_user_ml_model",
]
HEADER = [
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
    "currency",
    "unit",
    "tag_ml_model",
    "tag_team",
    "billed",
    "effective",
    "quantity",
]
ROW = [
    "2026-11-02",
    "2026-11-01",
    "111",
    "222",
    "Amazon SageMaker",
    "ml.g4dn.xlarge",
    "us-east-1",
    "",
    "ml.g4dn.xlarge",
    "Usage",
    "USD",
    "Hrs",
    "recsys",
    "",
    "12.5",
    "12.5",
    "24",
]
# what a column name in CUR's Athena schema looks like (every name build_query may use)
CUR_COLUMN = re.compile(
    r"\b((?:line_item|bill|product|pricing|savings_plan|reservation|resource_tags)_[a-z0-9_]+)\b"
)


def _cell_rows(*rows: list[str]) -> list[dict[str, Any]]:
    return [{"Data": [{"VarCharValue": v} for v in row]} for row in rows]


def test_the_query_on_a_cur_without_savings_plans_names_only_its_columns() -> None:
    client = boto3.client(
        "athena",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    sent: list[str] = []
    client.meta.events.register(
        "provide-client-params.athena.StartQueryExecution",
        lambda params, **_: sent.append(params["QueryString"]),
    )
    with Stubber(client) as stub:
        stub.add_response(
            "get_table_metadata",
            {
                "TableMetadata": {
                    "Name": "cur_table",
                    "Columns": [{"Name": c, "Type": "string"} for c in OLD_CUR],
                    "PartitionKeys": [{"Name": "year"}, {"Name": "month"}],
                }
            },
            {"CatalogName": "AwsDataCatalog", "DatabaseName": "cur", "TableName": "cur_table"},
        )
        stub.add_response(
            "start_query_execution",
            {"QueryExecutionId": "q-1"},
            {
                "QueryString": ANY,
                "QueryExecutionContext": {"Database": "cur"},
                "ResultConfiguration": {"OutputLocation": "s3://results/"},
            },
        )
        stub.add_response(
            "get_query_execution",
            {"QueryExecution": {"Status": {"State": "SUCCEEDED"}}},
            {"QueryExecutionId": "q-1"},
        )
        stub.add_response(
            "get_query_results",
            {"ResultSet": {"Rows": _cell_rows(HEADER, ROW)}},
            {"QueryExecutionId": "q-1"},
        )
        source = AthenaSource(
            client,
            database="cur",
            table="cur_table",
            month="2026-11",
            output="s3://results/",
            sleep=lambda s: None,
        )
        data = source.read({"ml_model", "team"})
        stub.assert_no_pending_responses()
    (query,) = sent
    named = set(CUR_COLUMN.findall(re.sub(r"AS \"?\w+\"?", "", query)))  # aliases aside
    assert named <= set(OLD_CUR), named - set(OLD_CUR)
    # what the old table lacks is read as empty, or leaves a line at its unblended cost
    assert "'' AS resource_id" in query
    assert "'' AS \"tag_team\"" in query
    assert "WHEN 'SavingsPlanCoveredUsage'" not in query
    assert "WHEN 'SavingsPlanNegation' THEN 0" in query
    assert data.rows_read == 1
    assert data.api_requests == 4  # metadata, start, status, one page of results
