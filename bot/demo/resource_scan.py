"""The demo's resource scan: a simulated AWS account (moto, in process), scanned twice.

The account holds the sample organisation's untagged GPU box (idle by its GPU metric), the
churn-predictor endpoint nobody calls, and an unattached volume. The first scan finds, prices and
records them; a week later the volume is gone, and its finding closes with what it saved so far.
Nothing reaches AWS: moto intercepts every call, and the step runs with fake credentials.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

from bot.bootstrap import AppServices
from bot.counts import counted

ACCOUNT = "345678901234"  # the sample billing data's account
REGION = "us-east-1"
FIRST_SCAN = dt.datetime(2026, 12, 1, 6, 0, tzinfo=dt.UTC)
LATER_DAYS = 7
DEVBOX_ID = "i-devbox9f3a"  # the box the sample ledger bills, untagged
VOLUME_ID = "vol-0c3a9e71d5b2f4a68"
VOLUME_CREATED = dt.datetime(2026, 8, 14, 9, 0)  # moto keeps naive UTC times
ENDPOINT = "churn-predictor-prod"
SKIPPED = "skipped: the simulated AWS account needs moto (pip install -e '.[dev]')"

# set (or cleared) for the step only, so nothing can reach a real account or endpoint
FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "MOTO_ACCOUNT_ID": ACCOUNT,
    "MOTO_EC2_LOAD_DEFAULT_AMIS": "false",  # no public AMIs (and their snapshots) to scan
    "AWS_PROFILE": None,
    "AWS_ENDPOINT_URL": None,
    "AWS_ENDPOINT_URL_EC2": None,
    "AWS_ENDPOINT_URL_SAGEMAKER": None,
    "AWS_ENDPOINT_URL_CLOUDWATCH": None,
    "AWS_ENDPOINT_URL_STS": None,
}


@contextlib.contextmanager
def fake_aws_env() -> Iterator[None]:
    """Use fake credentials and no custom endpoints inside; restore the environment after."""
    saved = {name: os.environ.get(name) for name in FAKE_ENV}
    try:
        for name, value in FAKE_ENV.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def moto_clients() -> Callable[..., Any]:
    """Return an aws(service, region) factory like AppServices.aws, for the mocked account."""
    import boto3

    clients: dict[tuple[str, str], Any] = {}  # one client per service and region, as a real one

    def aws(service: str, region: str | None = None) -> Any:
        key = (service, region or REGION)
        if key not in clients:
            clients[key] = boto3.client(service, region_name=key[1])  # type: ignore[call-overload]
        return clients[key]

    return aws


def build_account(aws: Callable[..., Any]) -> None:
    """Create the devbox, the endpoint and the volume.

    moto draws instance and volume ids at random and stamps volumes with today's date; the demo
    pins them (the ledger's devbox id, a fixed volume id and creation day), so every run prints
    the same and the devbox is priced from the sample ledger, as a real account's would be.
    """
    ec2, sm = aws("ec2", REGION), aws("sagemaker", REGION)
    with mock.patch("moto.ec2.models.instances.random_instance_id", return_value=DEVBOX_ID):
        ec2.run_instances(
            ImageId="ami-12c6146b",
            InstanceType="g5.12xlarge",
            MinCount=1,
            MaxCount=1,
            TagSpecifications=[
                {"ResourceType": "instance", "Tags": [{"Key": "Name", "Value": "devbox"}]}
            ],
        )
    with (
        mock.patch("moto.ec2.models.elastic_block_store.random_volume_id", return_value=VOLUME_ID),
        mock.patch("moto.ec2.models.elastic_block_store.utcnow", return_value=VOLUME_CREATED),
    ):
        ec2.create_volume(
            AvailabilityZone=f"{REGION}a",
            Size=1500,
            VolumeType="gp3",
            TagSpecifications=[
                {"ResourceType": "volume", "Tags": [{"Key": "Name", "Value": "old-ckpt-scratch"}]}
            ],
        )
    sm.create_model(
        ModelName="churn-predictor",
        ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/sagemaker",
        PrimaryContainer={"Image": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/churn:3"},
    )
    sm.create_endpoint_config(
        EndpointConfigName=f"{ENDPOINT}-config",
        ProductionVariants=[
            {
                "VariantName": "main",
                "ModelName": "churn-predictor",
                "InitialInstanceCount": 1,
                "InstanceType": "ml.c5.2xlarge",
                "InitialVariantWeight": 1.0,
            }
        ],
    )
    sm.create_endpoint(
        EndpointName=ENDPOINT,
        EndpointConfigName=f"{ENDPOINT}-config",
        Tags=[{"Key": "ml:model", "Value": "churn-predictor"}, {"Key": "team", "Value": "risk"}],
    )


def report_gpu_idle(aws: Callable[..., Any], now: dt.datetime) -> None:
    """Publish the devbox's four GPUs at under 1 % (the CloudWatch agent's metric), a day ago."""
    metrics = [
        {
            "MetricName": "nvidia_smi_utilization_gpu",
            "Dimensions": [
                {"Name": "InstanceId", "Value": DEVBOX_ID},
                {"Name": "index", "Value": str(index)},
                {"Name": "name", "Value": "NVIDIA A10G"},
            ],
            "Timestamp": now - dt.timedelta(days=1),
            "Value": 0.4,
        }
        for index in range(4)
    ]
    aws("cloudwatch", REGION).put_metric_data(Namespace="CWAgent", MetricData=metrics)


def show_resource_scan(
    services: AppServices, section: Callable[[str], None], waste_as_of: dt.date
) -> None:
    """Scan the simulated account, record the findings, scan again a week later, close one;
    then list the waste as `mlcost report waste` does (ledger findings as of `waste_as_of`)."""
    section("12. Resource scan of a simulated AWS account (moto): found, priced, then closed")
    try:
        from moto import mock_aws
    except ImportError:
        print(SKIPPED)
        return
    from sqlalchemy import select

    from bot.cli.waste_cmd import render_table
    from bot.db.schema import ResourceFindingRecord
    from bot.slack.blocks.waste import label_of, render_waste_text, unmarked
    from bot.waste.findings import waste_overview
    from bot.waste.jobs import scan_policy
    from bot.waste.lifecycle import closed_text, record_report
    from bot.waste.pricing import load_price_table
    from bot.waste.scan.context import ScanContext
    from bot.waste.scan.ledger import ledger_view
    from bot.waste.scan.run import account_id, scan_account

    settings = services.settings.scan
    later = FIRST_SCAN + dt.timedelta(days=LATER_DAYS)
    with fake_aws_env(), mock_aws():
        aws = moto_clients()
        build_account(aws)
        report_gpu_idle(aws, FIRST_SCAN)
        # the ledger as the demo ingested it (through Nov 30) prices both scans
        with services.unit_of_work() as session:
            ledger = ledger_view(
                session=session, as_of=FIRST_SCAN.date() - dt.timedelta(days=1), currency="USD"
            )
            policy = scan_policy(session=session, settings=settings)
        prices = load_price_table(settings.price_table_file)

        def scan(now: dt.datetime) -> Any:
            ctx = ScanContext(
                account=account_id(aws, REGION),
                now=now,
                policy=policy,
                ledger=ledger,
                prices=prices,
            )
            return scan_account(aws, [REGION], ctx)

        first = scan(FIRST_SCAN)
        print(f"mlcost waste scan --regions {REGION} --post, on {FIRST_SCAN:%Y-%m-%d %H:%M} UTC:")
        print(render_table(first))
        with services.unit_of_work() as session:
            life = record_report(session=session, report=first, now=FIRST_SCAN, s3_scanned=False)
            rows = session.scalars(select(ResourceFindingRecord).order_by(ResourceFindingRecord.id))
            where: dict[str, list[str]] = {}
            for row in rows:
                where.setdefault(row.channel or "nowhere", []).append(row.resource_id)
        print(
            f"recorded {counted(len(life.new), 'new finding')}; "
            f"{counted(len(life.posts), 'post')} queued, each "
            "with Stop it / Keep for 7 days / Not waste, to its owner's channel (unowned ones to "
            "FinOps): " + "; ".join(f"{c}: {', '.join(ids)}" for c, ids in sorted(where.items()))
        )

        aws("ec2", REGION).delete_volume(VolumeId=VOLUME_ID)
        report_gpu_idle(aws, later)
        second = scan(later)
        with services.unit_of_work() as session:
            life = record_report(session=session, report=second, now=later, s3_scanned=False)
            from sqlalchemy import select

            from bot.db.schema import ResourceFindingRecord

            closed = {
                f"{r.account}/{r.region}/{r.kind}/{r.resource_id}": r
                for r in session.scalars(
                    select(ResourceFindingRecord).where(ResourceFindingRecord.status == "closed")
                )
            }
            print(
                f"\n{LATER_DAYS} days later ({later:%Y-%m-%d}), after {VOLUME_ID} was deleted: "
                f"{counted(len(second.findings), 'finding')} still open, "
                f"{len(life.closed)} closed; "
                "in the closed finding's thread:"
            )
            for key, saved in life.closed:
                print("  " + closed_text(closed[key], saved))
    with services.unit_of_work() as session:
        overview = waste_overview(
            session=session, settings=services.settings.waste, as_of=waste_as_of, now=later
        )
    merged = ", ".join(f"{label_of(f)}: {unmarked(f.subject)}" for f in overview.merged)
    print(
        f"\nmlcost report waste on {later:%Y-%m-%d}: the ledger's findings and the open resource "
        f"findings, ranked together; listed once under their resource: {merged or 'none'}"
    )
    print(render_waste_text(overview), end="")
