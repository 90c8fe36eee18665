"""Time one resource scan of 5,000 resources in one region under moto.

    python benchmarks/scan.py

Creates (not timed) 3,000 GPU instances (1,000 idle by the CloudWatch agent's GPU metric,
1,000 busy by it, 1,000 with only CPU and network metrics, half of those idle), 1,000 unattached
volumes, 500 SageMaker endpoints (half called), and 500 snapshots of a deleted volume, 200 days
old; then times `scan_account` over us-east-1 twice and prints the seconds and the AWS API calls
by operation (counted with botocore's before-call event):

1. on moto as released. Two of moto's lookups are quadratic at this size, whatever the caller
   does: every EC2 resource it describes reads its tags by scanning the region's whole tag table
   (`TaggedEC2Resource.get_tags` -> `describe_tags(resource-id filter)`), so DescribeInstances,
   DescribeVolumes and DescribeSnapshots cost (resources described x tagged resources); and
   `GetMetricData` scans every stored datapoint in the window for every query, sorting each
   point's dimensions to compare them (queries x points). mlcost already makes one paginated
   DescribeInstances and ceil(series / 500) GetMetricData calls; fewer queries would mean not
   reading a series it needs.
2. on moto with those two lookups indexed (`index_moto_lookups`: tags by resource id, datapoints
   by metric name and dimensions), the same answers by construction and checked here (the two
   scans must find exactly the same findings). This is the figure for mlcost's own calls.

The setup writes one datapoint per series. The CloudWatch agent publishes a point a minute, but
GetMetricData with Period = the window returns one aggregate per series from AWS either way;
under moto every stored point is rescanned by every query, so more points would only measure moto.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import boto3
from moto import mock_aws
from moto.cloudwatch.models import CloudWatchBackend, Dimension
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends
from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix

from bot.waste.pricing import load_price_table
from bot.waste.scan.context import LedgerView, ScanContext, ScanPolicy
from bot.waste.scan.run import ScanReport, scan_account

REGION = "us-east-1"
GPU_METRIC, CPU_ONLY, VOLUMES, ENDPOINTS, SNAPSHOTS = 2_000, 1_000, 1_000, 500, 500


class CountingAws:
    """One client per (service, region); every API call counted and timed by operation."""

    def __init__(self) -> None:
        self.clients: dict[tuple[str, str], Any] = {}
        self.calls: Counter[str] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self._started = 0.0

    def __call__(self, service: str, region: str | None = None) -> Any:
        key = (service, region or REGION)
        if key not in self.clients:
            client = boto3.client(service, region_name=key[1])  # type: ignore[call-overload]
            client.meta.events.register("before-call", self._before)
            client.meta.events.register("after-call", self._after)
            self.clients[key] = client
        return self.clients[key]

    def _before(self, event_name: str, **kwargs: Any) -> None:
        self.calls[operation_of(event_name)] += 1
        self._started = time.perf_counter()

    def _after(self, event_name: str, **kwargs: Any) -> None:
        self.seconds[operation_of(event_name)] += time.perf_counter() - self._started


def operation_of(event_name: str) -> str:
    """Return `service:Operation` of an event name like `before-call.ec2.DescribeVolumes`."""
    service, operation = event_name.split(".", 2)[1:]
    return f"{service}:{operation}"


def launch(ec2: Any, count: int, itype: str, model: str) -> list[str]:
    ids: list[str] = []
    while len(ids) < count:
        n = min(500, count - len(ids))
        out = ec2.run_instances(
            ImageId="ami-12c6146b",
            InstanceType=itype,
            MinCount=n,
            MaxCount=n,
            TagSpecifications=[
                {"ResourceType": "instance", "Tags": [{"Key": "ml:model", "Value": model}]}
            ],
        )
        ids += [i["InstanceId"] for i in out["Instances"]]
    return ids


def put(cw: Any, namespace: str, data: list[dict[str, Any]]) -> None:
    for i in range(0, len(data), 1000):
        cw.put_metric_data(Namespace=namespace, MetricData=data[i : i + 1000])


def point(metric: str, dims: dict[str, str], value: float, when: dt.datetime) -> dict[str, Any]:
    return {
        "MetricName": metric,
        "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
        "Timestamp": when,
        "Value": value,
    }


def setup(now: dt.datetime) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    cw = boto3.client("cloudwatch", region_name=REGION)
    sm = boto3.client("sagemaker", region_name=REGION)
    when = now - dt.timedelta(hours=12)
    gpu_ids = launch(ec2, GPU_METRIC, "g5.xlarge", "recsys")
    put(
        cw,
        "CWAgent",
        [
            point(
                "nvidia_smi_utilization_gpu",
                {"InstanceId": i, "index": "0"},
                1 if n % 2 else 85,
                when,
            )
            for n, i in enumerate(gpu_ids)
        ],
    )
    cpu_ids = launch(ec2, CPU_ONLY, "g4dn.xlarge", "search")
    cpu = [
        point("CPUUtilization", {"InstanceId": i}, 2 if n % 2 else 70, when)
        for n, i in enumerate(cpu_ids)
    ]
    put(cw, "AWS/EC2", cpu)
    put(cw, "AWS/EC2", [point("NetworkIn", {"InstanceId": i}, 1e6, when) for i in cpu_ids])
    for _ in range(VOLUMES):
        ec2.create_volume(Size=100, VolumeType="gp3", AvailabilityZone=f"{REGION}a")
    gone = ec2.create_volume(Size=50, VolumeType="gp2", AvailabilityZone=f"{REGION}a")["VolumeId"]
    snaps = [ec2.create_snapshot(VolumeId=gone)["SnapshotId"] for _ in range(SNAPSHOTS)]
    ec2.delete_volume(VolumeId=gone)
    old = (now - dt.timedelta(days=200)).replace(tzinfo=None)
    for sid in snaps:
        ec2_backends[DEFAULT_ACCOUNT_ID][REGION].snapshots[sid].start_time = old
    sm.create_model(
        ModelName="m",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/sm",
        PrimaryContainer={"Image": "123.dkr.ecr.us-east-1.amazonaws.com/x:1"},
    )
    sm.create_endpoint_config(
        EndpointConfigName="c",
        ProductionVariants=[
            {
                "VariantName": "main",
                "ModelName": "m",
                "InitialInstanceCount": 1,
                "InstanceType": "ml.g4dn.xlarge",
                "InitialVariantWeight": 1.0,
            }
        ],
    )
    for n in range(ENDPOINTS):
        sm.create_endpoint(EndpointName=f"ep-{n}", EndpointConfigName="c")
    put(
        cw,
        "AWS/SageMaker",
        [
            point("Invocations", {"EndpointName": f"ep-{n}", "VariantName": "main"}, 10, when)
            for n in range(0, ENDPOINTS, 2)
        ],
    )


def index_moto_lookups() -> Callable[[], None]:
    """Index moto's two quadratic lookups (same answers); return the function that undoes it."""
    get_tags, get_metric_data = TaggedEC2Resource.get_tags, CloudWatchBackend.get_metric_data

    def indexed_tags(self: Any) -> list[dict[str, str]]:
        # what describe_tags(filters={"resource-id": [id]}) returns, without scanning every tag
        if not self.id:
            return []
        kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(self.id), "")
        return [
            {"resource_id": self.id, "key": k, "value": v, "resource_type": kind}
            for k, v in self.ec2_backend.tags.get(self.id, {}).items()
        ]

    def indexed_metric_data(self: Any, queries: list[dict[str, Any]], **kwargs: Any) -> Any:
        if any("MetricStat" not in q for q in queries):
            return get_metric_data(self, queries=queries, **kwargs)
        points = self.get_all_metrics()
        # moto keeps a point for a query when the names match and sorted() of both dimension
        # lists compare equal (or, without dimensions, when the namespace matches too): the
        # candidates are exactly the points under the same key, computed with moto's own sort
        by_key: defaultdict[tuple[Any, ...], list[Any]] = defaultdict(list)
        by_name: defaultdict[str, list[Any]] = defaultdict(list)
        for md in points:
            by_key[(md.name, _dims(md.dimensions))].append(md)
            by_name[md.name].append(md)
        results = []
        for query in queries:
            metric = query["MetricStat"]["Metric"]
            dims = [Dimension(d["Name"], d["Value"]) for d in metric.get("Dimensions", [])]
            name = metric["MetricName"]
            subset = by_key[(name, _dims(dims))] if dims else by_name[name]
            self.get_all_metrics = lambda subset=subset: subset
            try:
                results += get_metric_data(self, queries=[query], **kwargs)
            finally:
                del self.get_all_metrics
        return results

    TaggedEC2Resource.get_tags = indexed_tags  # type: ignore[method-assign]
    CloudWatchBackend.get_metric_data = indexed_metric_data  # type: ignore[method-assign,assignment]

    def undo() -> None:
        TaggedEC2Resource.get_tags = get_tags  # type: ignore[method-assign]
        CloudWatchBackend.get_metric_data = get_metric_data  # type: ignore[method-assign]

    return undo


def _dims(dimensions: list[Any]) -> tuple[tuple[str, str], ...]:
    return tuple((d.name, d.value) for d in sorted(dimensions))


def timed_scan(ctx: ScanContext) -> tuple[ScanReport, float, CountingAws]:
    aws = CountingAws()
    started = time.perf_counter()
    report = scan_account(aws, [REGION], ctx)
    return report, time.perf_counter() - started, aws


def show(label: str, report: ScanReport, seconds: float, aws: CountingAws) -> None:
    kinds = Counter(str(f.kind) for f in report.findings)
    print(f"\n{label}")
    print(f"scan: {seconds:.2f} s, {len(report.findings):,} findings {dict(sorted(kinds.items()))}")
    print(f"failures: {len(report.failures)}")
    in_aws = sum(aws.seconds.values())
    print(
        f"AWS API calls: {sum(aws.calls.values()):,}, {in_aws:.2f} s inside them (moto's "
        f"simulation here), {seconds - in_aws:.2f} s in mlcost's own code"
    )
    for operation, count in sorted(aws.calls.items()):
        print(f"  {operation}: {count:,} calls, {aws.seconds[operation]:.2f} s")


def main() -> None:
    # moto only: never the caller's real credentials
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    os.environ.pop("AWS_PROFILE", None)
    os.environ.pop("AWS_SESSION_TOKEN", None)
    total = GPU_METRIC + CPU_ONLY + VOLUMES + ENDPOINTS + SNAPSHOTS
    print(
        f"resources in {REGION}: {GPU_METRIC + CPU_ONLY:,} GPU instances ({GPU_METRIC:,} with the "
        f"GPU metric, {CPU_ONLY:,} CPU and network only), {VOLUMES:,} unattached volumes, "
        f"{ENDPOINTS:,} endpoints, {SNAPSHOTS:,} orphaned snapshots = {total:,}"
    )
    with mock_aws():
        now = dt.datetime.now(dt.UTC)
        started = time.perf_counter()
        setup(now)
        print(f"setup (not part of the scan): {time.perf_counter() - started:.1f} s")
        ctx = ScanContext(
            account=DEFAULT_ACCOUNT_ID,
            now=now,
            policy=ScanPolicy(),
            ledger=LedgerView(models={"recsys": "ranking", "search": "ranking"}),
            prices=load_price_table(),
        )
        # the indexed scan runs first, so it, not the stock one, pays for loading botocore's
        # service models and moto's first-call setup
        undo = index_moto_lookups()
        try:
            indexed = timed_scan(ctx)
        finally:
            undo()
        stock = timed_scan(ctx)
    show("1. moto as released (its tag and datapoint lookups are quadratic)", *stock)
    show("2. moto with those lookups indexed (mlcost's calls, same answers)", *indexed)
    same = [f.to_dict() for f in stock[0].findings] == [f.to_dict() for f in indexed[0].findings]
    print(f"\nsame findings in both scans: {same}")
    if not same:
        raise SystemExit("the indexed lookups changed moto's answers: figure 2 is void")


if __name__ == "__main__":
    main()
