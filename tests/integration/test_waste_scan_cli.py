"""`mlcost waste scan` through moto: a plain table with one precision per money column, or JSON."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from bot.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def seed() -> None:
    ec2 = boto3.client("ec2", region_name="eu-west-1")
    ec2.create_volume(Size=100, VolumeType="gp3", AvailabilityZone="eu-west-1a")
    ec2.create_volume(Size=7, VolumeType="gp2", AvailabilityZone="eu-west-1a")
    ec2.run_instances(
        ImageId="ami-12c6146b",
        InstanceType="g5.xlarge",
        MinCount=1,
        MaxCount=1,
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": "model", "Value": "<!channel> *x*"}]}
        ],
    )


def test_table_and_json(
    database_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLCOST_SCAN_REGIONS", '["us-east-1"]')
    db = ("--database-url", database_url)
    with mock_aws():
        seed()
        code, out, err = run(capsys, *db, "waste", "scan", "--regions", "eu-west-1")
        assert code == 0, err
        lines = out.splitlines()
        assert lines[0] == "Resource scan of account 123456789012 in eu-west-1"
        assert lines[1].split() == [
            "Cost/month",
            "Saving/month",
            "Region",
            "Kind",
            "Resource",
            "Fix",
        ]
        rows = [line for line in lines[2:] if line.startswith(" ") and "$" in line.split()[0]]
        assert [r.split()[0] for r in rows] == ["$734.38", "$8.00", "$0.70"]  # ranked, 2 places
        assert "`" not in out and "<!channel>" in out  # no Slack markup added; tags shown as is
        assert lines[-1] == "3 findings: $743.08 a month, $737.73 saved by the fixes"

        code, out, err = run(capsys, *db, "waste", "scan", "--format", "json")
        assert code == 0, err
        doc = json.loads(out)
        assert doc["regions"] == ["us-east-1"] and doc["findings"] == []  # the setting's region
        assert doc["currency"] == "USD" and doc["total_monthly_cost"] == "0.00"

        code, out, _ = run(
            capsys, *db, "waste", "scan", "--regions", "eu-west-1", "--format", "json"
        )
        doc = json.loads(out)
        assert [f["monthly_cost"] for f in doc["findings"]] == ["734.38", "8.00", "0.70"]
        first = doc["findings"][0]
        assert first["kind"] == "gpu_instance" and first["currency"] == "USD"
        assert first["price_source"].startswith("price table (AWS EC2 On-Demand")
        assert first["recommendation"]["action"] == "stop_instances"


def test_bad_input_is_refused_clearly(
    database_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = ("--database-url", database_url)
    code, _, err = run(capsys, *db, "waste", "scan")
    assert code == 2 and "set MLCOST_SCAN_REGIONS or pass --regions" in err
    with pytest.raises(SystemExit) as exit_:
        main([*db, "waste", "scan", "--regions", "us-east-1,narnia"])
    assert exit_.value.code == 2 and "not a region: narnia" in capsys.readouterr().err
    monkeypatch.setenv("MLCOST_SCAN_S3_PATTERNS", '["ckpt/*"]')
    code, _, err = run(capsys, *db, "waste", "scan", "--regions", "us-east-1")
    assert code == 2 and "is not s3://bucket/prefix/*" in err
