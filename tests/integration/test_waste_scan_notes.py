"""Scan notes: what a scanner says that is neither a finding nor a failure: report and CLI."""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from bot.cli import main
from bot.waste.pricing import load_price_table
from bot.waste.scan.context import LedgerView, ScanContext, ScanPolicy
from bot.waste.scan.model import ResourceFinding
from bot.waste.scan.run import ScanNote, ScanReport, scan_account
from tests.integration.test_waste_scan_eks import cluster, node_group
from tests.support.aws_calls import CountingAws

REGION = "us-east-1"


def context() -> ScanContext:
    return ScanContext(
        account="123456789012",
        now=dt.datetime(2026, 12, 3, 12, tzinfo=dt.UTC),
        policy=ScanPolicy(),
        ledger=LedgerView(),
        prices=load_price_table(),
    )


def chatty(aws: Any, region: str, ctx: ScanContext) -> list[ResourceFinding]:
    ctx.note(f"said in {region}")
    return []


def refused(aws: Any, region: str, ctx: ScanContext) -> list[ResourceFinding]:
    ctx.note(f"read half of {region}")
    raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "ListThings")


def test_notes_are_filed_under_their_scanner_and_region_and_kept_when_it_fails() -> None:
    ctx = context()
    report = scan_account(
        lambda *_: None,
        [REGION, "eu-west-1"],
        ctx,
        scanners={"Chatty": chatty, "Refused": refused},
    )
    assert report.notes == (
        ScanNote(REGION, "Chatty", "said in us-east-1"),
        ScanNote(REGION, "Refused", "read half of us-east-1"),
        ScanNote("eu-west-1", "Chatty", "said in eu-west-1"),
        ScanNote("eu-west-1", "Refused", "read half of eu-west-1"),
    )
    assert [str(f) for f in report.failures] == [
        "Refused in us-east-1 not scanned: AccessDenied: no",
        "Refused in eu-west-1 not scanned: AccessDenied: no",
    ]
    assert ctx.notes == []  # each run wrote to its own copy, never to the caller's context


def test_a_report_built_without_notes_has_none() -> None:
    """Code that builds a ScanReport by hand (five fields, as before notes) keeps working."""
    report = ScanReport("123456789012", (REGION,), (), (), "USD")
    assert report.notes == ()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_prints_notes_after_the_findings_and_exits_0(
    database_url: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    db = ("--database-url", database_url)
    with mock_aws():
        aws = CountingAws()
        cluster(aws, "ml")
        [dark] = node_group(aws, "ml", "gpu-dark", "g5.xlarge", 1)  # no Container Insights
        boto3.client("ec2", region_name=REGION).create_volume(
            Size=100, VolumeType="gp3", AvailabilityZone=f"{REGION}a"
        )
        with caplog.at_level(logging.WARNING, logger="bot.waste.scan.eks"):
            code, out, err = run(capsys, *db, "waste", "scan", "--regions", REGION)
        assert code == 0, err
        said = (
            f"EKS node group ml/gpu-dark in {REGION}: not judged, node {dark} has no "
            "Container Insights GPU metrics (node_gpu_reserved_capacity and "
            "node_gpu_usage_total) over the last 7 days; enable Container Insights with "
            "enhanced observability"
        )
        lines = out.splitlines()
        assert lines[-2].startswith("1 finding: $8.00 a month")  # the volume, then the note
        assert lines[-1] == f"note: {said}"
        assert "note" not in err and "*" not in lines[-1] and "`" not in lines[-1]
        # the log line stays for operators who read logs, not the CLI
        assert any("gpu-dark in us-east-1 not judged" in r.getMessage() for r in caplog.records)

        code, out, err = run(capsys, *db, "waste", "scan", "--regions", REGION, "--format", "json")
        assert code == 0, err
        doc = json.loads(out)
        assert doc["notes"] == [{"region": REGION, "kind": "EKS GPU node groups", "message": said}]
        assert [f["kind"] for f in doc["findings"]] == ["ebs_volume"]
        assert err == ""


def test_a_clean_scan_has_an_empty_notes_list(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with mock_aws():
        code, out, _ = run(
            capsys, "--database-url", database_url, "waste", "scan", "--regions", REGION
        )
        assert code == 0 and "note:" not in out
        code, out, _ = run(
            capsys,
            *("--database-url", database_url, "waste", "scan", "--regions", REGION),
            *("--format", "json"),
        )
        assert code == 0 and json.loads(out)["notes"] == []
