"""The scan's edges: a failing scanner fails alone, CloudWatch batches, training overruns."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from bot.waste.pricing import load_price_table
from bot.waste.scan.context import LedgerView, ScanContext, ScanPolicy
from bot.waste.scan.metrics import MetricQuery, fetch_window_values
from bot.waste.scan.model import Reason
from bot.waste.scan.run import scan_account
from bot.waste.scan.sagemaker import job_prefix, scan_training_jobs, usual_durations
from tests.support.aws_calls import CountingAws

NOW = dt.datetime(2026, 12, 3, 12, tzinfo=dt.UTC)


def context(now: dt.datetime = NOW, **policy: Any) -> ScanContext:
    return ScanContext(
        account="123456789012",
        now=now,
        policy=ScanPolicy(**policy),
        ledger=LedgerView(),
        prices=load_price_table(),
    )


class Denied:
    """A client whose every call is refused, as with a role missing sagemaker:List*."""

    def __getattr__(self, operation: str) -> Any:
        def refuse(*_args: Any, **_kwargs: Any) -> Any:
            raise ClientError(
                {"Error": {"Code": "AccessDeniedException", "Message": "not authorized"}},
                operation,
            )

        return refuse


@mock_aws
def test_a_failing_scanner_fails_alone_and_says_where() -> None:
    real = CountingAws()
    real("ec2", "us-east-1").create_volume(Size=10, VolumeType="gp3", AvailabilityZone="us-east-1a")

    def aws(service: str, region: str | None = None) -> Any:
        return Denied() if service == "sagemaker" else real(service, region)

    report = scan_account(aws, ["us-east-1"], context(now=dt.datetime.now(dt.UTC)))
    assert [f.reason for f in report.findings] == [Reason.UNATTACHED]
    assert sorted(str(f) for f in report.failures) == [
        "SageMaker Studio apps in us-east-1 not scanned: AccessDeniedException: not authorized",
        "SageMaker endpoints in us-east-1 not scanned: AccessDeniedException: not authorized",
        "SageMaker notebook instances in us-east-1 not scanned: AccessDeniedException: "
        "not authorized",
        "SageMaker training jobs in us-east-1 not scanned: AccessDeniedException: not authorized",
    ]


@mock_aws
def test_get_metric_data_takes_500_queries_a_call() -> None:
    aws = CountingAws()
    cw = aws("cloudwatch", "us-east-1")
    when = dt.datetime.now(dt.UTC) - dt.timedelta(hours=2)
    cw.put_metric_data(
        Namespace="AWS/EC2",
        MetricData=[
            {
                "MetricName": "CPUUtilization",
                "Dimensions": [{"Name": "InstanceId", "Value": f"i-{n:04d}"}],
                "Timestamp": when,
                "Value": float(n % 100),
            }
            for n in range(0, 1200, 100)
        ],
    )
    queries = [
        MetricQuery("AWS/EC2", "CPUUtilization", (("InstanceId", f"i-{n:04d}"),), "Average")
        for n in range(1200)
    ]
    values = fetch_window_values(cw, queries, dt.datetime.now(dt.UTC), 7)
    assert aws.calls["cloudwatch:GetMetricData"] == 3  # 500 + 500 + 200
    assert values[queries[100]] == Decimal(0) and values[queries[0]] == Decimal(0)
    assert values[queries[1]] is None  # no data is not zero
    assert len([v for v in values.values() if v is not None]) == 12


def test_training_job_prefix_and_usual_duration() -> None:
    assert job_prefix("bert-train-2026-11-03-12-00-00") == "bert-train"
    assert job_prefix("bert-train-17") == "bert-train"
    assert job_prefix("xgb_churn_20261103") == "xgb_churn"
    start = NOW - dt.timedelta(days=10)
    done = [
        {
            "TrainingJobName": f"bert-train-{n}",
            "CreationTime": start,
            "TrainingEndTime": start + dt.timedelta(hours=h),
        }
        for n, h in enumerate([2, 3, 10])
    ] + [
        {
            "TrainingJobName": "rare-1",
            "CreationTime": start,
            "TrainingEndTime": start + dt.timedelta(hours=1),
        }
    ]
    assert usual_durations(done, 3) == {"bert-train": dt.timedelta(hours=3)}  # median; rare: 1 job


class FakeTrainingApi:
    """SageMaker's training-job reads (moto completes jobs at once, so none is InProgress)."""

    def __init__(self, running: list[dict[str, Any]], completed: list[dict[str, Any]]) -> None:
        self.pages = {"InProgress": running, "Completed": completed}

    def get_paginator(self, name: str) -> Any:
        assert name == "list_training_jobs"
        pages = self.pages

        class Paginator:
            def paginate(self, StatusEquals: str) -> list[dict[str, Any]]:
                return [{"TrainingJobSummaries": pages[StatusEquals]}]

        return Paginator()

    def describe_training_job(self, TrainingJobName: str) -> dict[str, Any]:
        return {
            "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:1:training-job/{TrainingJobName}",
            "ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2},
        }

    def list_tags(self, ResourceArn: str) -> dict[str, Any]:
        protected = ResourceArn.endswith("bert-train-99")
        return {"Tags": [{"Key": "mlcost:protect", "Value": ""}] if protected else []}


@pytest.mark.parametrize("hours, found", [(8, False), (10, True)])
def test_training_jobs_past_three_times_their_median(hours: int, found: bool) -> None:
    start = NOW - dt.timedelta(days=10)
    completed = [
        {
            "TrainingJobName": f"bert-train-{n}",
            "CreationTime": start,
            "TrainingEndTime": start + dt.timedelta(hours=3),
        }
        for n in range(3)
    ]
    running = [
        {"TrainingJobName": "bert-train-50", "CreationTime": NOW - dt.timedelta(hours=hours)},
        {"TrainingJobName": "bert-train-99", "CreationTime": NOW - dt.timedelta(hours=50)},
        {"TrainingJobName": "new-kind-1", "CreationTime": NOW - dt.timedelta(hours=50)},
    ]
    api = FakeTrainingApi(running, completed)
    findings = scan_training_jobs(lambda *_: api, "us-east-1", context())
    assert [f.resource_id for f in findings] == (["bert-train-50"] if found else [])
    if found:
        job = findings[0]
        assert job.reason == Reason.OVERRUNNING
        assert job.monthly_cost == Decimal("36866.90")  # 2 × 25.2513 $/h × 730 h
        assert "median" in job.evidence and dict(job.resource.target) == {
            "training_job_name": "bert-train-50"
        }


@mock_aws
def test_an_endpoint_called_on_one_variant_only_is_busy() -> None:
    aws = CountingAws()
    sm, cw = aws("sagemaker", "us-east-1"), aws("cloudwatch", "us-east-1")
    sm.create_model(
        ModelName="m",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/sm",
        PrimaryContainer={"Image": "123.dkr.ecr.us-east-1.amazonaws.com/x:1"},
    )
    sm.create_endpoint_config(
        EndpointConfigName="c",
        ProductionVariants=[
            {
                "VariantName": v,
                "ModelName": "m",
                "InitialInstanceCount": 1,
                "InstanceType": "ml.g4dn.xlarge",
                "InitialVariantWeight": 1.0,
            }
            for v in ("a", "b")
        ],
    )
    sm.create_endpoint(EndpointName="ab", EndpointConfigName="c")
    from bot.waste.scan.sagemaker import scan_endpoints

    now = dt.datetime.now(dt.UTC)
    assert [f.resource_id for f in scan_endpoints(aws, "us-east-1", context(now=now))] == ["ab"]
    cw.put_metric_data(
        Namespace="AWS/SageMaker",
        MetricData=[
            {
                "MetricName": "Invocations",
                "Value": 3.0,
                "Timestamp": now - dt.timedelta(hours=5),
                "Dimensions": [
                    {"Name": "EndpointName", "Value": "ab"},
                    {"Name": "VariantName", "Value": "b"},
                ],
            }
        ],
    )
    assert scan_endpoints(aws, "us-east-1", context(now=now)) == []


def test_the_waste_command_module_imports_neither_boto3_nor_pandas() -> None:
    import subprocess
    import sys

    code = (
        "import sys, bot.cli.waste_cmd; "
        "print(sorted({'boto3', 'botocore', 'pandas'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
