"""CloudWatch reads in bulk: list the series once, then GetMetricData 500 queries a call.

Never one call per resource per metric: a scan of 5,000 resources makes a handful of
ListMetrics pages and ceil(queries / 500) GetMetricData calls (plus their NextToken pages).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

MAX_QUERIES_PER_CALL = 500  # GetMetricData's limit


@dataclass(frozen=True)
class MetricQuery:
    """One series and how to reduce it over the whole window to one number."""

    namespace: str
    metric: str
    dimensions: tuple[tuple[str, str], ...]
    stat: str


def window_bounds(now: dt.datetime, days: int) -> tuple[dt.datetime, dt.datetime]:
    """Return [start, end) of the window, aligned to the minute (CloudWatch periods are)."""
    end = now.replace(second=0, microsecond=0)
    return end - dt.timedelta(days=days), end


def fetch_window_values(
    cloudwatch: Any, queries: list[MetricQuery], now: dt.datetime, days: int
) -> dict[MetricQuery, Decimal | None]:
    """Return each query's value over the window (None where the series has no data)."""
    if not queries:
        return {}
    start, end = window_bounds(now, days)
    period = days * 86400
    values: dict[MetricQuery, Decimal | None] = dict.fromkeys(queries)
    unique = list(values)
    for offset in range(0, len(unique), MAX_QUERIES_PER_CALL):
        batch = unique[offset : offset + MAX_QUERIES_PER_CALL]
        by_id = {f"q{n}": q for n, q in enumerate(batch)}
        request = {
            "MetricDataQueries": [
                {
                    "Id": qid,
                    "ReturnData": True,
                    "MetricStat": {
                        "Metric": {
                            "Namespace": q.namespace,
                            "MetricName": q.metric,
                            "Dimensions": [{"Name": k, "Value": v} for k, v in q.dimensions],
                        },
                        "Period": period,
                        "Stat": q.stat,
                    },
                }
                for qid, q in by_id.items()
            ],
            "StartTime": start,
            "EndTime": end,
        }
        for page in _pages(cloudwatch, request):
            for result in page.get("MetricDataResults", []):
                query = by_id.get(result["Id"])
                points = result.get("Values") or []
                if query is None or not points:
                    continue
                total = _reduce(query.stat, [Decimal(str(p)) for p in points])
                previous = values[query]
                values[query] = (
                    total if previous is None else _reduce(query.stat, [previous, total])
                )
    return values


def list_series(
    cloudwatch: Any, metric: str, namespace: str | None = None
) -> Iterator[tuple[str, tuple[tuple[str, str], ...]]]:
    """Yield (namespace, dimensions) of every series of a metric (ListMetrics, paginated)."""
    kwargs: dict[str, Any] = {"MetricName": metric}
    if namespace:
        kwargs["Namespace"] = namespace
    for page in cloudwatch.get_paginator("list_metrics").paginate(**kwargs):
        for item in page.get("Metrics", []):
            dims = tuple((d["Name"], d["Value"]) for d in item.get("Dimensions", []))
            yield item["Namespace"], dims


def _pages(cloudwatch: Any, request: dict[str, Any]) -> Iterable[dict[str, Any]]:
    token: str | None = None
    while True:
        response = cloudwatch.get_metric_data(**request, **({"NextToken": token} if token else {}))
        yield response
        token = response.get("NextToken")
        if not token:
            return


def _reduce(stat: str, points: list[Decimal]) -> Decimal:
    if stat == "Sum":
        return sum(points, Decimal(0))
    if stat == "Maximum":
        return max(points)
    if stat == "Minimum":
        return min(points)
    return sum(points, Decimal(0)) / len(points)  # Average of equal periods
