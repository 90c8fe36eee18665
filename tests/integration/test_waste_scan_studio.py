"""SageMaker Studio apps: GPU apps in service with no user activity found and priced, others not.

moto 5.2.5 has Studio domains but no apps (ListApps raises NotImplementedError), so SageMaker's
answers come from botocore's Stubber, which checks every request and canned reply against the
API model.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from bot.waste.pricing import load_price_table
from bot.waste.scan.context import LedgerView, ScanContext, ScanPolicy
from bot.waste.scan.model import Action, Reason, ResourceKind
from bot.waste.scan.sagemaker import scan_studio_apps
from tests.support.aws_calls import CountingAws

NOW = dt.datetime(2026, 12, 3, 12, tzinfo=dt.UTC)
REGION = "us-east-1"
DOMAIN, EMPTY_DOMAIN = "d-abc123", "d-def456"
SM_TABLE = "price table (Amazon SageMaker AI pricing us-east-1 real-time inference, 2025-06)"
ARN = "arn:aws:sagemaker:us-east-1:123456789012:app/{domain}/{holder}/{kind}/{name}"


def ago(**delta: float) -> dt.datetime:
    return NOW - dt.timedelta(**delta)


def app(
    name: str, kind: str, itype: str, status: str = "InService", space: str = "", user: str = ""
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "DomainId": DOMAIN,
        "AppType": kind,
        "AppName": name,
        "Status": status,
        "CreationTime": ago(days=30),
        "ResourceSpec": {"InstanceType": itype},
    }
    out.update({"SpaceName": space} if space else {"UserProfileName": user})
    return out


def describe(listed: dict[str, Any], activity: Any, health: Any, created: Any) -> dict[str, Any]:
    holder = listed.get("SpaceName") or listed["UserProfileName"]
    out = {
        **listed,
        "AppArn": ARN.format(
            domain=DOMAIN, holder=holder, kind=listed["AppType"], name=listed["AppName"]
        ),
        "CreationTime": created,
        "LastHealthCheckTimestamp": health,
    }
    if activity is not None:
        out["LastUserActivityTimestamp"] = activity
    return out


def expect_describe(stub: Stubber, listed: dict[str, Any], reply: dict[str, Any]) -> None:
    holder = {"SpaceName": listed["SpaceName"]} if listed.get("SpaceName") else {}
    holder = holder or {"UserProfileName": listed["UserProfileName"]}
    params = {"DomainId": DOMAIN, "AppType": listed["AppType"], "AppName": listed["AppName"]}
    stub.add_response("describe_app", reply, {**params, **holder})


def expect_tags(stub: Stubber, reply: dict[str, Any], tags: list[dict[str, str]]) -> None:
    stub.add_response("list_tags", {"Tags": tags}, {"ResourceArn": reply["AppArn"]})


def context() -> ScanContext:
    return ScanContext(
        account="123456789012",
        now=NOW,
        policy=ScanPolicy(),
        ledger=LedgerView(models={"recsys": "ranking"}),
        prices=load_price_table(),
    )


@pytest.fixture
def sagemaker() -> Any:
    return boto3.client("sagemaker", region_name=REGION)


def test_idle_gpu_apps_are_found_and_priced_busy_cpu_new_and_protected_are_not(
    sagemaker: Any,
) -> None:
    idle = app("idle-lab", "JupyterLab", "ml.g5.xlarge", space="alice-space")
    busy = app("busy-lab", "JupyterLab", "ml.g5.xlarge", space="bob-space")
    cpu = app("cpu-lab", "JupyterLab", "ml.t3.medium", space="bob-space")
    system = app("default", "JupyterServer", "system", user="bob")
    old = app("old-kg", "KernelGateway", "ml.g4dn.xlarge", user="carol")
    new = app("new-code", "CodeEditor", "ml.g5.xlarge", space="dan-space")
    kept = app("kept-lab", "JupyterLab", "ml.p3.2xlarge", space="erin-space")
    gone = app("gone-lab", "JupyterLab", "ml.g5.xlarge", status="Deleted", space="alice-space")
    pending = app("pending-lab", "JupyterLab", "ml.g5.xlarge", status="Pending", space="bob-space")
    idle_reply = describe(idle, ago(days=10), ago(hours=1), ago(days=30))
    old_reply = describe(old, ago(hours=1), ago(hours=1), ago(days=20))  # health check moved it
    kept_reply = describe(kept, ago(days=30), ago(hours=1), ago(days=40))
    with Stubber(sagemaker) as stub:
        stub.add_response(
            "list_domains",
            {"Domains": [{"DomainId": DOMAIN}], "NextToken": "domains-2"},
            {},
        )
        stub.add_response(
            "list_apps",
            {"Apps": [idle, busy, cpu, system], "NextToken": "p2"},
            {"DomainIdEquals": DOMAIN},
        )
        expect_describe(stub, idle, idle_reply)
        expect_tags(stub, idle_reply, [{"Key": "ml:model", "Value": "recsys"}])
        expect_describe(stub, busy, describe(busy, ago(hours=2), ago(hours=1), ago(days=30)))
        stub.add_response(
            "list_apps",
            {"Apps": [old, new, kept, gone, pending]},
            {"DomainIdEquals": DOMAIN, "NextToken": "p2"},
        )
        expect_describe(stub, old, old_reply)
        expect_tags(stub, old_reply, [])
        expect_describe(stub, new, describe(new, ago(hours=1), ago(hours=1), ago(days=2)))
        expect_describe(stub, kept, kept_reply)
        expect_tags(stub, kept_reply, [{"Key": "mlcost:protect", "Value": ""}])
        stub.add_response(
            "list_domains", {"Domains": [{"DomainId": EMPTY_DOMAIN}]}, {"NextToken": "domains-2"}
        )
        stub.add_response("list_apps", {"Apps": []}, {"DomainIdEquals": EMPTY_DOMAIN})
        ctx = context()
        findings = scan_studio_apps(lambda *_: sagemaker, REGION, ctx)
        stub.assert_no_pending_responses()

    found = {f.resource_id: f for f in findings}
    assert sorted(found) == [
        f"{DOMAIN}/alice-space/JupyterLab/idle-lab",
        f"{DOMAIN}/carol/KernelGateway/old-kg",
    ]
    lab = found[f"{DOMAIN}/alice-space/JupyterLab/idle-lab"]
    assert (lab.kind, lab.reason) == (ResourceKind.SAGEMAKER_STUDIO_APP, Reason.NO_ACTIVITY)
    assert (lab.monthly_cost, lab.price_source) == (Decimal("1027.84"), SM_TABLE)  # 1.408 × 730
    assert lab.signal == "LastUserActivityTimestamp (SageMaker DescribeApp)"
    assert "no user activity since 2026-11-23" in lab.evidence
    assert lab.recommendation.action == Action.DELETE_STUDIO_APP
    assert lab.recommendation.monthly_saving == Decimal("1027.84")
    assert dict(lab.resource.target) == {
        "domain_id": DOMAIN,
        "space_name": "alice-space",
        "app_type": "JupyterLab",
        "app_name": "idle-lab",
    }
    assert lab.resource.model == "recsys" and lab.resource.team == "ranking"

    kernel = found[f"{DOMAIN}/carol/KernelGateway/old-kg"]
    assert kernel.monthly_cost == Decimal("537.57")  # 0.7364 × 730
    assert kernel.signal.startswith("time in service since CreationTime")
    assert "in service for 20 days" in kernel.evidence
    assert dict(kernel.resource.target)["user_profile_name"] == "carol"
    # the apps whose activity the health checks hid, reported or not (new-code is too young)
    assert ctx.notes == [
        f"SageMaker Studio in {REGION}: user activity unknown for 2 apps "
        f"({DOMAIN}/carol/old-kg, {DOMAIN}/dan-space/new-code): LastUserActivityTimestamp moves "
        "with SageMaker's health checks, so they were judged by time in service"
    ]


def test_a_ledger_run_rate_prices_the_app(sagemaker: Any) -> None:
    idle = app("idle-lab", "JupyterLab", "ml.g5.xlarge", space="alice-space")
    reply = describe(idle, ago(days=10), ago(hours=1), ago(days=30))
    ctx = context()
    ledger = LedgerView(run_rates={reply["AppArn"].lower(): Decimal("400.00")})
    ctx = ScanContext(ctx.account, NOW, ctx.policy, ledger, ctx.prices)
    with Stubber(sagemaker) as stub:
        stub.add_response("list_domains", {"Domains": [{"DomainId": DOMAIN}]})
        stub.add_response("list_apps", {"Apps": [idle]})
        expect_describe(stub, idle, reply)
        expect_tags(stub, reply, [])
        [finding] = scan_studio_apps(lambda *_: sagemaker, REGION, ctx)
    assert (finding.monthly_cost, finding.price_source) == (Decimal("400.00"), "ledger")


@mock_aws
def test_an_account_without_studio_domains_costs_one_call() -> None:
    aws = CountingAws()
    assert scan_studio_apps(aws, REGION, context()) == []
    assert dict(aws.calls) == {"sagemaker:ListDomains": 1}
