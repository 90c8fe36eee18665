"""SageMaker invocations from CloudWatch (moto), attributed to models through the ledger."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import boto3
import pytest
from moto import mock_aws
from sqlalchemy.orm import Session

from bot.economics.cloudwatch_invocations import (
    endpoint_name,
    endpoints_by_model,
    fetch_invocations,
)
from bot.economics.value_metrics import ValueRow
from bot.errors import IngestError
from tests.support.economics_seed import REGISTRY, add_spend
from tests.support.sample_registry import load_registry

ARN = "arn:aws:sagemaker:us-east-1:123456789012:endpoint/"


def make_endpoint(sagemaker: object, name: str, variants: list[str]) -> None:
    sm = sagemaker
    sm.create_model(
        ModelName=f"{name}-model",  # type: ignore[attr-defined]
        ExecutionRoleArn="arn:aws:iam::123456789012:role/sm",
        PrimaryContainer={"Image": "123.dkr.ecr.us-east-1.amazonaws.com/x:1"},
    )
    sm.create_endpoint_config(  # type: ignore[attr-defined]
        EndpointConfigName=f"{name}-config",
        ProductionVariants=[
            {
                "VariantName": v,
                "ModelName": f"{name}-model",
                "InitialInstanceCount": 1,
                "InstanceType": "ml.g4dn.2xlarge",
                "InitialVariantWeight": 1.0,
            }
            for v in variants
        ],
    )
    sm.create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-config")  # type: ignore[attr-defined]


def put(cloudwatch: object, endpoint: str, variant: str, when: dt.datetime, value: float) -> None:
    cloudwatch.put_metric_data(  # type: ignore[attr-defined]
        Namespace="AWS/SageMaker",
        MetricData=[
            {
                "MetricName": "Invocations",
                "Timestamp": when,
                "Value": value,
                "Dimensions": [
                    {"Name": "EndpointName", "Value": endpoint},
                    {"Name": "VariantName", "Value": variant},
                ],
            }
        ],
    )


def test_endpoint_arns() -> None:
    assert endpoint_name(ARN + "recsys-prod") == "recsys-prod"
    assert endpoint_name("arn:aws:sagemaker:us-east-1:1:training-job/x") is None
    assert endpoint_name("i-0abc") is None and endpoint_name(None) is None


@mock_aws
def test_invocations_are_summed_per_model_and_day(session: Session) -> None:
    load_registry(session, REGISTRY)
    day1, day2 = dt.date(2026, 11, 1), dt.date(2026, 11, 2)
    add_spend(session, "recsys", "ranking", "serving", day1, "5", ARN + "recsys-prod")
    add_spend(session, "recsys", "ranking", "serving", day1, "5", ARN + "recsys-canary")
    add_spend(session, "search", "ranking", "serving", day2, "5", ARN + "search-prod")
    add_spend(session, "search", "ranking", "training", day2, "5", "i-0abc")
    endpoints = endpoints_by_model(session=session, start=day1, end=dt.date(2026, 12, 1))
    assert endpoints == {"recsys": ["recsys-canary", "recsys-prod"], "search": ["search-prod"]}

    sagemaker = boto3.client("sagemaker", region_name="us-east-1")
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    make_endpoint(sagemaker, "recsys-prod", ["blue", "green"])
    make_endpoint(sagemaker, "search-prod", ["AllTraffic"])
    # recsys-canary was deleted: its metrics are still read under variant AllTraffic
    at = dt.datetime(2026, 11, 1, 10, tzinfo=dt.UTC)
    put(cloudwatch, "recsys-prod", "blue", at, 1000)
    put(cloudwatch, "recsys-prod", "blue", at + dt.timedelta(hours=5), 500)
    put(cloudwatch, "recsys-prod", "green", at, 250)
    put(cloudwatch, "recsys-canary", "AllTraffic", at, 7)
    put(cloudwatch, "recsys-prod", "blue", at + dt.timedelta(days=1), 40)
    put(cloudwatch, "search-prod", "AllTraffic", at + dt.timedelta(days=1), 90)
    put(cloudwatch, "other-prod", "AllTraffic", at, 123456)  # not attributed to any model
    rows = fetch_invocations(
        cloudwatch=cloudwatch,
        sagemaker=sagemaker,
        endpoints=endpoints,
        start=day1,
        end=dt.date(2026, 11, 3),
    )
    assert rows == [
        ValueRow("recsys", day1, "invocations", Decimal(1757)),
        ValueRow("recsys", day2, "invocations", Decimal(40)),
        ValueRow("search", day2, "invocations", Decimal(90)),
    ]
    assert fetch_invocations(
        cloudwatch=cloudwatch,
        sagemaker=sagemaker,
        endpoints=endpoints,
        start=day2,
        end=dt.date(2026, 11, 3),
    )[0].units == Decimal(40)


def test_cloudwatch_errors_become_ingest_errors() -> None:
    class Broken:
        def get_metric_data(self, **_: object) -> dict[str, object]:
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "GetMetricData")

        def describe_endpoint(self, **_: object) -> dict[str, object]:
            return {"EndpointName": "x", "ProductionVariants": [{"VariantName": "AllTraffic"}]}

    with pytest.raises(IngestError, match="CloudWatch GetMetricData failed"):
        fetch_invocations(
            cloudwatch=Broken(),
            sagemaker=Broken(),
            endpoints={"m": ["x"]},
            start=dt.date(2026, 11, 1),
            end=dt.date(2026, 11, 2),
        )
