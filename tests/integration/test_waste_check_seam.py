"""A new waste check is one declaration: registered once, it is scanned, priced, recorded,
posted, listed and given its Stop it words, with no other file touched (docs/layout.md,
"Adding a waste check")."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bot.db.schema import DailySpend, OutboxMessage
from bot.waste import catalog
from bot.waste.actions import Outcome, perform_stop
from bot.waste.checks import LedgerCheck, LedgerScope, WasteFinding, run_rate, spend_in
from bot.waste.findings import WasteOverview, covered_ids, find_waste, resource_entries
from bot.waste.lifecycle import complete_scopes, record_report
from bot.waste.pricing import load_price_table
from bot.waste.scan.context import LedgerView, ScanContext, ScanPolicy
from bot.waste.scan.model import (
    FindingKind,
    Recommendation,
    Resource,
    ResourceFinding,
    StopAction,
)
from bot.waste.scan.pricing_rules import hourly_price
from bot.waste.scan.run import ScanReport, scan_account
from bot.waste.scan.scanner import ResourceScanner
from tests.support.ledger import ingestion_run, spend_record
from tests.support.outbox import rendered
from tests.support.sample_registry import load_registry

ACCOUNT = "123456789012"
REGION = "us-east-1"
NOW = dt.datetime(2026, 12, 3, 12, tzinfo=dt.UTC)
AS_OF = dt.date(2026, 11, 30)

# ---- the new resource scanner: everything about it is in this block ---------------------------


def scan_idle_file_systems(aws: Any, region: str, ctx: ScanContext) -> list[ResourceFinding]:
    """FSx for Lustre file systems nobody has read for the whole window."""
    findings = []
    for fs in aws("fsx", region).describe_file_systems()["FileSystems"]:
        if fs["ReadBytes"]:
            continue
        resource = Resource(
            kind="fsx_file_system",
            resource_id=fs["FileSystemId"],
            account=ctx.account,
            region=region,
            resource_type="ml.g4dn.xlarge",  # the cache nodes' type, priced from the table
            target=(("file_system_id", fs["FileSystemId"]),),
        )
        price = hourly_price(ctx, [fs["FileSystemId"]], "sagemaker", "ml.g4dn.xlarge")
        findings.append(
            ResourceFinding(
                resource=resource,
                reason="unread",
                evidence=f"{fs['FileSystemId']} read 0 bytes in {ctx.policy.window_days} days",
                signal="DataReadBytes",
                monthly_cost=price.monthly,
                price_source=price.source,
                recommendation=Recommendation(
                    "delete_file_system", "back it up to S3 and delete it", price.monthly
                ),
            )
        )
    return findings


def delete_advice(target: Mapping[str, Any]) -> str:
    return f"back up {target.get('file_system_id')} to S3, then delete it by hand."


FILE_SYSTEMS = ResourceScanner(
    name="FSx file systems",
    scan=scan_idle_file_systems,
    kinds=(FindingKind("fsx_file_system", "FSx for Lustre file system"),),
    stops=(
        StopAction(
            "delete_file_system",
            "records the approval only: mlcost never deletes file systems (a recommendation)",
            delete_advice,
        ),
    ),
)

# ---- the new ledger check ----------------------------------------------------------------------


def notebook_spend(scope: LedgerScope) -> Iterable[WasteFinding]:
    rows = scope.session.execute(
        select(DailySpend.model, func.sum(DailySpend.billed_cost))
        .where(*spend_in(scope.week, scope.currency), DailySpend.stage == "notebook")
        .group_by(DailySpend.model)
    )
    for model, cost in rows:
        yield WasteFinding(
            "notebook_spend",
            f"`{model}`",
            run_rate(Decimal(cost)),
            f"`{model}` paid for notebooks all week",
            "stop notebooks at night",
            model=model,
        )


NOTEBOOK_SPEND = LedgerCheck("notebook_spend", "Notebooks left running", notebook_spend)

# ---- the tests --------------------------------------------------------------------------------


@pytest.fixture
def registered() -> Iterator[None]:
    catalog.register(FILE_SYSTEMS)
    catalog.register(NOTEBOOK_SPEND)
    yield
    catalog.unregister(FILE_SYSTEMS)
    catalog.unregister(NOTEBOOK_SPEND)


class FakeFsx:
    def describe_file_systems(self) -> dict[str, Any]:
        return {
            "FileSystems": [
                {"FileSystemId": "fs-0idle", "ReadBytes": 0},
                {"FileSystemId": "fs-0busy", "ReadBytes": 10**12},
            ]
        }


def aws(service: str, region: str) -> Any:
    """Only FSx answers: every built-in scanner fails alone (AccessDenied)."""
    if service == "fsx":
        return FakeFsx()
    raise ClientError({"Error": {"Code": "AccessDenied", "Message": "test"}}, "Describe")


def context() -> ScanContext:
    return ScanContext(
        account=ACCOUNT,
        now=NOW,
        policy=ScanPolicy(),
        ledger=LedgerView(),
        prices=load_price_table(),
    )


def test_a_registered_scanner_is_scanned_priced_recorded_and_posted_with_its_words(
    session: Session, registered: None
) -> None:
    load_registry(session)
    report = scan_account(aws, [REGION], context())
    [found] = report.findings
    assert (found.kind, found.resource_id) == ("fsx_file_system", "fs-0idle")
    assert found.monthly_cost > 0 and found.price_source.startswith("price table")
    assert "FSx file systems" not in {f.kind for f in report.failures}

    life = record_report(session=session, report=report, now=NOW, s3_scanned=False)
    assert life.new == [f"{ACCOUNT}/{REGION}/fsx_file_system/fs-0idle"]
    [post] = session.scalars(select(OutboxMessage)).all()
    text, blocks = rendered(post)
    assert text.startswith("Waste: FSx for Lustre file system fs-0idle costs $")
    assert "mlcost never deletes file systems" in str(blocks)

    [entry] = resource_entries(session=session, now=NOW, currency="USD")
    assert covered_ids(entry) == {"fs-0idle"}  # FindingKind's default: its own id
    overview = WasteOverview([], [entry], [], [], [], "USD", NOW)
    from bot.slack.blocks.waste import build_waste_blocks, render_waste_text

    assert "FSx for Lustre file system fs-0idle" in render_waste_text(overview)
    _, blocks = build_waste_blocks([entry])
    assert "FSx for Lustre file system" in str(blocks)

    clean = ScanReport(ACCOUNT, (REGION,), (), (), "USD")
    assert (REGION, "fsx_file_system") in complete_scopes(clean, s3_scanned=False)


def test_its_stop_it_records_the_approval_and_gives_its_advice(registered: None) -> None:
    result = perform_stop(
        aws,
        action="delete_file_system",
        region=REGION,
        target={"file_system_id": "fs-0idle"},
        enabled=True,
    )
    assert result.outcome is Outcome.RECOMMEND_ONLY
    assert result.text == (
        "approval recorded only: back up fs-0idle to S3, then delete it by hand."
    )


def test_a_registered_ledger_check_is_found_and_listed_with_its_label(
    session: Session, registered: None
) -> None:
    run = ingestion_run(session, location="test", status="ok")
    for i in range(7):
        day = AS_OF - dt.timedelta(days=i)
        session.add(spend_record(run, day, "20", resource_id="nb-1", stage="notebook", model="m"))
    session.flush()
    [finding] = [f for f in find_waste(session=session, as_of=AS_OF) if f.kind == "notebook_spend"]
    assert finding.monthly_cost == Decimal("600.00")
    from bot.slack.blocks.waste import build_waste_blocks, render_waste_text

    overview = WasteOverview([finding], [], [], [], [], "USD", NOW)
    assert "Notebooks left running: m" in render_waste_text(overview)
    assert "Notebooks left running" in str(build_waste_blocks([finding])[1])


def test_a_kind_is_registered_once() -> None:
    with pytest.raises(ValueError, match="gpu_instance"):
        catalog.register(
            ResourceScanner("again", scan_idle_file_systems, (FindingKind("gpu_instance", "x"),))
        )


# ---- the example in docs/layout.md, run as written ---------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "layout.md"


def documented_scanner() -> ResourceScanner:
    """Run the example module of docs/layout.md's "Adding a waste check"; return its scanner."""
    section = DOCS.read_text().split("## Adding a waste check", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    exec(compile(code, str(DOCS), "exec"), namespace)
    scanner = namespace["FILE_SYSTEMS"]
    assert isinstance(scanner, ResourceScanner)
    return scanner


class FakeFsxAccount:
    """FSx and CloudWatch as the example calls them: one file system read, one not."""

    def describe_file_systems(self) -> dict[str, Any]:
        return {
            "FileSystems": [
                {"FileSystemId": "fs-0read", "StorageCapacity": 1200, "FileSystemType": "LUSTRE"},
                {
                    "FileSystemId": "fs-0cold",
                    "StorageCapacity": 2400,
                    "FileSystemType": "LUSTRE",
                    "Tags": [{"Key": "ml:model", "Value": "recsys"}],
                },
                {
                    "FileSystemId": "fs-0kept",
                    "StorageCapacity": 1200,
                    "Tags": [{"Key": "mlcost:protect", "Value": "yes"}],
                },
            ]
        }

    def get_metric_statistics(self, **query: Any) -> dict[str, Any]:
        fid = query["Dimensions"][0]["Value"]
        return {"Datapoints": [{"Sum": 5.0 if fid == "fs-0read" else 0.0}]}


def documented_aws(service: str, region: str) -> Any:
    if service in ("fsx", "cloudwatch"):
        return FakeFsxAccount()
    raise ClientError({"Error": {"Code": "AccessDenied", "Message": "test"}}, "Describe")


def test_the_documented_example_scans_records_and_posts(session: Session) -> None:
    load_registry(session)
    scanner = documented_scanner()
    catalog.register(scanner)
    try:
        ctx = dataclasses.replace(
            context(), ledger=LedgerView(models={"recsys": "ranking"}), now=NOW
        )
        report = scan_account(documented_aws, [REGION], ctx)
        [found] = report.findings
        assert (found.resource_id, found.resource.model) == ("fs-0cold", "recsys")
        assert found.monthly_cost == Decimal("192.00")  # 2,400 GiB of gp3 at $0.08
        record_report(session=session, report=report, now=NOW, s3_scanned=False)
        [post] = session.scalars(select(OutboxMessage)).all()
        assert post.channel == "C0RANKING"  # its model's team, as every resource finding
        assert rendered(post)[0].startswith(
            "Waste: FSx for Lustre file system fs-0cold costs $192.00 a month"
        )
        result = perform_stop(
            documented_aws,
            action="delete_file_system",
            region=REGION,
            target={"file_system_id": "fs-0cold"},
            enabled=True,
        )
        assert result.outcome is Outcome.RECOMMEND_ONLY and "fs-0cold" in result.text
    finally:
        catalog.unregister(scanner)
