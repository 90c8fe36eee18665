"""`mlcost waste scan --post` through moto and the fake Slack: posted once, closed when gone."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from bot.bootstrap import system_clock
from bot.cli import main
from bot.config import Settings
from bot.db.engine import make_engine, make_session_factory, session_scope, upgrade
from bot.notify.schedule import JobSpec
from bot.notify.scheduler import trigger_for
from bot.waste.jobs import waste_jobs
from tests.support.fake_slack import FakeSlack
from tests.support.jobs import run_job
from tests.support.sample_registry import load_registry

REGION = "eu-west-1"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_scan_post_posts_once_and_closes_what_is_gone(
    database_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fake_slack: FakeSlack,
) -> None:
    engine = make_engine(database_url)
    upgrade(engine)
    with session_scope(make_session_factory(engine)) as session:
        load_registry(session)
    engine.dispose()
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_API_URL", fake_slack.url)
    monkeypatch.setenv("MLCOST_SCAN_MIN_MONTHLY", "0")  # these volumes cost $8 and $0.56 a month
    scan = ("--database-url", database_url, "waste", "scan", "--regions", REGION, "--post")
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        big = ec2.create_volume(Size=100, VolumeType="gp3", AvailabilityZone=f"{REGION}a")
        small = ec2.create_volume(Size=7, VolumeType="gp2", AvailabilityZone=f"{REGION}a")
        code, out, err = run(capsys, *scan)
        assert code == 0, err
        assert (
            "recorded 2 findings: 2 new, 0 worse, 0 raised again, 0 silenced (Keep or Not "
            "waste), 0 already posted; 2 posts queued"
        ) in out
        assert "delivered 2, found already posted 0, to retry 0, undeliverable 0" in out
        posted = [m for (c, _), m in fake_slack.messages.items() if c == "C0FINOPS"]
        assert {m["text"].split(" (")[0] for m in posted} == {
            f"Waste: EBS volume {big['VolumeId']} costs $8.00 a month",
            f"Waste: EBS volume {small['VolumeId']} costs $0.70 a month",
        }

        code, out, _ = run(capsys, *scan, "--format", "json")
        assert json.loads(out)["findings"]  # the summary goes to stderr: stdout stays JSON
        code, out, err = run(capsys, *scan, "--format", "json")
        assert "0 new" in err and "2 already posted; 0 posts queued" in err
        assert len(fake_slack.calls_to("chat.postMessage")) == 2

        ec2.delete_volume(VolumeId=small["VolumeId"])
        code, out, _ = run(capsys, *scan)
        key = f"123456789012/{REGION}/ebs_volume/{small['VolumeId']}"
        assert f"closed: {key} no longer found; saved so far $0.00" in out
        replies = [m for m in fake_slack.messages.values() if m.get("thread_ts")]
        assert len(replies) == 1
        assert replies[0]["text"].startswith(f"{small['VolumeId']}: Closed: {small['VolumeId']}")
        assert "Saved so far: $0.00" in replies[0]["text"]


def test_scan_post_without_a_token_records_and_says_it_did_not_deliver(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with mock_aws():
        boto3.client("ec2", region_name=REGION).create_volume(
            Size=1000,
            VolumeType="gp3",
            AvailabilityZone=f"{REGION}a",  # $80 a month: posted
        )
        code, out, _ = run(
            capsys, "--database-url", database_url, "waste", "scan", "--regions", REGION, "--post"
        )
    assert code == 0
    assert "not posted (no channel; set finops_channel in the registry)" in out
    assert "not delivered: SLACK_BOT_TOKEN is not set" in out


def test_the_daily_scan_is_scheduled_only_when_regions_are_set() -> None:
    def jobs(settings: Settings) -> dict[str, JobSpec]:
        declared = waste_jobs(
            settings.scan,
            session_factory=None,  # type: ignore[arg-type]
            clock=system_clock,
            aws=None,
            edge=None,  # type: ignore[arg-type]
        )
        return {s.id: s for s in declared}

    assert "resource-scan" not in jobs(Settings())
    specs = jobs(Settings(MLCOST_SCAN_REGIONS=["us-east-1"]))
    assert "resource-scan" in specs
    assert str(trigger_for(specs["resource-scan"].schedule)).startswith(
        "cron[hour='7', minute='30'"
    )
    assert str(trigger_for(specs["resource-stop-retry"].schedule)) == "interval[0:15:00]"
    enabled = set(jobs(Settings(MLCOST_ACTIONS_ENABLED=True)))
    assert "resource-stop-retry" in enabled and "resource-scan" not in enabled


def test_the_daily_job_scans_records_and_posts(database_url: str, fake_slack: FakeSlack) -> None:
    from bot.bootstrap import AppServices, outbox_deps
    from bot.config import SecretStr
    from bot.slack.client import make_web_client
    from bot.waste.jobs import run_resource_scan_job

    engine = make_engine(database_url)
    upgrade(engine)
    factory = make_session_factory(engine)
    with session_scope(factory) as session:
        load_registry(session)
    settings = Settings(
        MLCOST_SCAN_REGIONS=[REGION],
        SLACK_BOT_TOKEN=SecretStr("xoxb-test"),
        SLACK_API_URL=fake_slack.url,
    )
    services = AppServices(
        settings=settings, session_factory=factory, client=make_web_client(settings)
    )
    with mock_aws():
        boto3.client("ec2", region_name=REGION).create_volume(
            Size=1000,
            VolumeType="gp3",
            AvailabilityZone=f"{REGION}a",  # $80 a month: posted
        )
        first = run_job(services, "resource-scan")
        second = run_job(services, "resource-scan")
    engine.dispose()
    assert first is not None and len(first.lifecycle.new) == 1
    assert first.delivery is not None and len(first.delivery.delivered) == 1
    assert second is not None and second.lifecycle.posts == []
    assert len(fake_slack.calls_to("chat.postMessage")) == 1
    unset = {**outbox_deps(services), "settings": Settings().scan}
    assert run_resource_scan_job(aws=services.aws, **unset) is None
