"""SageMaker endpoint invocations from CloudWatch, as daily value for the models they serve.

The endpoints of a model are the SageMaker endpoint ARNs the ledger attributed to it. Invocations
are published per (EndpointName, VariantName), so each endpoint's variants are read with
DescribeEndpoint and their daily sums added up.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend
from bot.economics.value_metrics import ValueRow
from bot.errors import IngestError

log = logging.getLogger(__name__)

METRIC = "invocations"
ENDPOINT_ARN_RE = re.compile(
    r"^arn:aws[a-z-]*:sagemaker:[^:]*:[^:]*:endpoint/(?P<name>[^/]+)$", re.IGNORECASE
)
MAX_QUERIES = 500  # GetMetricData's limit per request
DAY_SECONDS = 86400


def endpoint_name(resource_id: str | None) -> str | None:
    """Return the endpoint name of a SageMaker endpoint ARN, or None for anything else."""
    match = ENDPOINT_ARN_RE.match(resource_id or "")
    return match["name"] if match else None


def endpoints_by_model(
    *, session: Session, start: dt.date, end: dt.date, models: list[str] | None = None
) -> dict[str, list[str]]:
    """Return the SageMaker endpoints the ledger attributed to each model in [start, end)."""
    query = (
        select(DailySpend.model, DailySpend.resource_id)
        .where(
            DailySpend.day >= start,
            DailySpend.day < end,
            DailySpend.model.is_not(None),
            DailySpend.resource_id.like("%:endpoint/%"),
        )
        .distinct()
    )
    if models:
        query = query.where(DailySpend.model.in_(models))
    found: dict[str, set[str]] = defaultdict(set)
    for model, resource_id in session.execute(query):
        name = endpoint_name(resource_id)
        if name is not None and model is not None:
            found[model].add(name)
    return {model: sorted(names) for model, names in sorted(found.items())}


def _variants(sagemaker: Any, endpoint: str) -> tuple[str, list[str]]:
    """Return the endpoint's exact name and variant names (AllTraffic if it is gone)."""
    try:
        described = sagemaker.describe_endpoint(EndpointName=endpoint)
    except ClientError as exc:
        log.info(
            "endpoint %s not described (%s); assuming variant AllTraffic",
            endpoint,
            exc.response.get("Error", {}).get("Code"),
        )
        return endpoint, ["AllTraffic"]
    names = [v["VariantName"] for v in described.get("ProductionVariants") or []]
    return described.get("EndpointName", endpoint), names or ["AllTraffic"]


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for index in range(0, len(items), size):
        yield items[index : index + size]


def fetch_invocations(
    *,
    cloudwatch: Any,
    sagemaker: Any,
    endpoints: dict[str, list[str]],
    start: dt.date,
    end: dt.date,
) -> list[ValueRow]:
    """Return daily invocations per model over [start, end), summed over endpoints and variants."""
    queries, owner = _invocation_queries(sagemaker, endpoints)
    try:
        totals = _daily_totals(cloudwatch, queries, owner, start, end)
    except (ClientError, BotoCoreError) as exc:
        raise IngestError(f"CloudWatch GetMetricData failed: {exc}") from None
    return [
        ValueRow(model, day, METRIC, units.to_integral_value())
        for (model, day), units in sorted(totals.items())
    ]


def _invocation_queries(
    sagemaker: Any, endpoints: dict[str, list[str]]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Return one daily Invocations query per endpoint variant, and each query's model by id."""
    queries: list[dict[str, Any]] = []
    owner: dict[str, str] = {}
    for model, names in endpoints.items():
        for name in names:
            exact, variants = _variants(sagemaker, name)
            for variant in variants:
                query_id = f"q{len(queries)}"
                owner[query_id] = model
                queries.append(
                    {
                        "Id": query_id,
                        "MetricStat": {
                            "Metric": {
                                "Namespace": "AWS/SageMaker",
                                "MetricName": "Invocations",
                                "Dimensions": [
                                    {"Name": "EndpointName", "Value": exact},
                                    {"Name": "VariantName", "Value": variant},
                                ],
                            },
                            "Period": DAY_SECONDS,
                            "Stat": "Sum",
                        },
                        "ReturnData": True,
                    }
                )
    return queries, owner


def _daily_totals(
    cloudwatch: Any,
    queries: list[dict[str, Any]],
    owner: dict[str, str],
    start: dt.date,
    end: dt.date,
) -> dict[tuple[str, dt.date], Decimal]:
    """Run the queries (in chunks, following pages) and sum the values per model and day."""
    totals: dict[tuple[str, dt.date], Decimal] = defaultdict(Decimal)
    start_time = dt.datetime.combine(start, dt.time(), dt.UTC)
    end_time = dt.datetime.combine(end, dt.time(), dt.UTC)
    for chunk in _chunks(queries, MAX_QUERIES):
        token: str | None = None
        while True:
            request: dict[str, Any] = {
                "MetricDataQueries": chunk,
                "StartTime": start_time,
                "EndTime": end_time,
                "ScanBy": "TimestampAscending",
            }
            if token:
                request["NextToken"] = token
            response = cloudwatch.get_metric_data(**request)
            for result in response.get("MetricDataResults", []):
                model = owner[result["Id"]]
                for stamp, value in zip(
                    result.get("Timestamps", []), result.get("Values", []), strict=False
                ):
                    day = stamp.astimezone(dt.UTC).date()
                    if start <= day < end:
                        totals[(model, day)] += Decimal(repr(value))
            token = response.get("NextToken")
            if not token:
                break
    return totals
