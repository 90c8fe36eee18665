"""Stop it / Keep for 7 days / Not waste through signed requests, the fake Web API and moto."""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import boto3
import pytest
from moto import mock_aws
from sqlalchemy import select

from bot.bootstrap import outbox_deps
from bot.db.engine import session_scope
from bot.db.schema import AuditLog, ResourceFindingRecord
from bot.waste.jobs import post_scan
from bot.waste.scan.model import Action, Reason, Recommendation, Resource, ResourceFinding
from bot.waste.scan.model import ResourceKind as Kind
from bot.waste.scan.run import ScanReport
from tests.support.aws_calls import CountingAws
from tests.support.jobs import run_job
from tests.support.sample_registry import load_registry
from tests.support.slack_app import SlackHarness, seed
from tests.support.slack_requests import button_click, posted_button_click

REGION = "us-east-1"
OWNER, STRANGER, ADMIN = "U0AAA111", "U0STRANGER", "U0ADMIN01"
STOP, KEEP, NOT_WASTE = "waste_resource_stop", "waste_resource_keep", "waste_resource_not_waste"


@dataclasses.dataclass
class World:
    slack: SlackHarness
    aws: CountingAws
    account: str

    def instance(self, tags: dict[str, str] | None = None) -> str:
        ec2 = self.aws("ec2", REGION)
        kwargs: dict[str, Any] = {}
        if tags:
            spec = [{"Key": k, "Value": v} for k, v in tags.items()]
            kwargs["TagSpecifications"] = [{"ResourceType": "instance", "Tags": spec}]
        out = ec2.run_instances(
            ImageId="ami-12c6146b", InstanceType="g5.xlarge", MinCount=1, MaxCount=1, **kwargs
        )
        return str(out["Instances"][0]["InstanceId"])

    def state(self, iid: str) -> str:
        reply = self.aws("ec2", REGION).describe_instances(InstanceIds=[iid])
        return str(reply["Reservations"][0]["Instances"][0]["State"]["Name"])

    def post(self, *found: ResourceFinding) -> None:
        report = ScanReport(self.account, (REGION,), tuple(found), (), "USD")
        services = self.slack.services
        posted = post_scan(report, settings=services.settings.scan, **outbox_deps(services))
        assert posted.delivery is not None and len(posted.delivery.delivered) == len(found)

    def row(self, rid: str) -> ResourceFindingRecord:
        with session_scope(self.slack.session_factory) as session:
            return session.scalars(
                select(ResourceFindingRecord).where(ResourceFindingRecord.resource_id == rid)
            ).one()

    def message(self, rid: str) -> tuple[str, dict[str, Any]]:
        key = f"waste-resource:{self.row(rid).id}:1"
        return next(
            (c, m)
            for (c, _), m in self.slack.fake.messages.items()
            if (m.get("metadata") or {}).get("event_payload", {}).get("key") == key
        )

    def age_claim(self, rid: str, by: dt.timedelta) -> None:
        """Move a Stop it claim's time back, as if the database's clock had moved on."""
        with session_scope(self.slack.session_factory) as session:
            row = session.scalars(
                select(ResourceFindingRecord).where(ResourceFindingRecord.resource_id == rid)
            ).one()
            assert row.action_at is not None
            row.action_at -= by

    def press(self, rid: str, action_id: str, user: str, *, wait: bool = True) -> dict[str, Any]:
        """Press a button of the finding's post as the user; return the click's payload.

        With `wait`, also wait for the Stop it it started in the background to finish.
        """
        channel, message = self.message(rid)
        payload = posted_button_click(
            channel,
            message,
            user=user,
            action_id=action_id,
            block_id="waste_resource",
            response_url=f"{self.slack.fake.url}respond/click",
        )
        assert self.slack.action(payload).status == 200
        self.slack.settle()
        if wait:
            self.acted()
        return payload

    def acted(self) -> None:
        """Wait until every Stop it handed to the background has finished."""
        assert self.slack.services.stop_actions().wait(10), "a Stop it is still running"

    def thread(self, rid: str) -> list[str]:
        channel, parent = self.message(rid)
        return [
            m["text"]
            for (c, _), m in sorted(self.slack.fake.messages.items())
            if c == channel and m.get("thread_ts") == parent["ts"]
        ]

    def audit(self) -> list[AuditLog]:
        with session_scope(self.slack.session_factory) as session:
            return list(session.scalars(select(AuditLog).where(AuditLog.action.like("waste_%"))))

    def enable_actions(self) -> None:
        services = self.slack.services
        services.settings = services.settings.replace(actions_enabled=True)


@pytest.fixture
def world(slack: SlackHarness) -> Iterator[World]:
    with mock_aws():
        aws = CountingAws()
        slack.services.aws = aws
        seed(slack, load_registry)
        account = boto3.client("sts", region_name=REGION).get_caller_identity()["Account"]
        yield World(slack, aws, account)


def idle(world: World, iid: str, *, model: str | None = "recsys") -> ResourceFinding:
    resource = Resource(
        kind=Kind.GPU_INSTANCE,
        resource_id=iid,
        account=world.account,
        region=REGION,
        resource_type="g5.xlarge",
        model=model,
        team="ranking" if model else None,
        target=(("instance_id", iid),),
    )
    return ResourceFinding(
        resource=resource,
        reason=Reason.IDLE,
        evidence=f"{iid} averaged 0.3 % GPU over 7 days",
        signal="nvidia_smi_utilization_gpu",
        monthly_cost=Decimal("734.38"),
        price_source="price table (test)",
        recommendation=Recommendation(
            Action.STOP_INSTANCES, "stop the instance", Decimal("734.38")
        ),
    )


def test_a_non_owner_is_refused_and_nothing_changes(world: World) -> None:
    iid = world.instance({"ml:model": "recsys"})
    world.enable_actions()
    world.post(idle(world, iid))
    world.press(iid, STOP, STRANGER)
    refusal = world.slack.responses(1)[0]
    assert refusal["response_type"] == "ephemeral"
    assert "Only the owners of model recsys (<@U0AAA111>) or an admin" in refusal["text"]
    assert "Nothing was changed" in refusal["text"]
    assert world.state(iid) == "running" and world.aws.calls["ec2:StopInstances"] == 0
    row = world.row(iid)
    assert (row.decision, row.action_result, row.action_count) == ("none", None, 0)
    assert world.audit() == [] and world.thread(iid) == []
    assert world.slack.fake.calls_to("chat.update") == []


def test_by_default_stop_it_records_the_approval_and_changes_nothing(world: World) -> None:
    iid = world.instance({"ml:model": "recsys"})
    world.post(idle(world, iid))
    world.press(iid, STOP, OWNER)
    assert world.aws.calls["ec2:DescribeInstances"] == 0  # not even looked at
    assert world.aws.calls["ec2:StopInstances"] == 0
    assert world.state(iid) == "running"
    row = world.row(iid)
    assert (row.decision, row.decided_by) == ("stop", OWNER)
    assert row.action_result == "disabled: approval recorded only"
    (reply,) = world.thread(iid)
    assert (
        "approval recorded only: actions are disabled (MLCOST_ACTIONS_ENABLED is not true)" in reply
    )
    updated = world.slack.fake.calls_to("chat.update")[-1].params
    assert "Stop it approved: recorded only (actions are disabled)" in str(updated["blocks"])
    actions = [(a.action, a.actor) for a in world.audit()]
    assert actions == [("waste_resource_stop", OWNER), ("waste_resource_action", OWNER)]


def test_enabled_stop_it_stops_the_instance_and_says_so_in_the_thread(world: World) -> None:
    iid = world.instance({"ml:model": "recsys"})
    world.enable_actions()
    world.post(idle(world, iid))
    world.press(iid, STOP, OWNER)
    assert world.state(iid) in ("stopping", "stopped")
    assert world.aws.calls["ec2:StopInstances"] == 1
    (reply,) = world.thread(iid)
    assert f"done: stopped {iid}" in reply
    row = world.row(iid)
    assert row.action_result is not None and row.action_result.startswith(f"done: stopped {iid}")
    result = next(a for a in world.audit() if a.action == "waste_resource_action")
    assert result.detail["before"]["action_result"] == "acting"
    assert result.detail["after"]["action_result"] == row.action_result
    assert result.detail["aws_calls"] == ["ec2.DescribeInstances", "ec2.StopInstances"]
    # the post shows the decision and has no buttons left
    blocks = world.slack.fake.calls_to("chat.update")[-1].params["blocks"]
    assert not [b for b in blocks if b["type"] == "actions"]
    assert f"Stop it approved: done: stopped {iid}" in str(blocks)


def test_a_protected_instance_is_never_stopped(world: World) -> None:
    iid = world.instance({"ml:model": "recsys"})
    world.enable_actions()
    world.post(idle(world, iid))
    # tagged after the scan: the tag is read again when acting
    world.aws("ec2", REGION).create_tags(
        Resources=[iid], Tags=[{"Key": "mlcost:protect", "Value": "yes"}]
    )
    world.press(iid, STOP, OWNER)
    assert world.state(iid) == "running" and world.aws.calls["ec2:StopInstances"] == 0
    assert world.row(iid).action_result == "refused: protected"
    (reply,) = world.thread(iid)
    assert f"refused: {iid} carries the mlcost:protect tag" in reply


def test_a_double_press_acts_once(world: World) -> None:
    iid = world.instance({"ml:model": "recsys"})
    world.enable_actions()
    world.post(idle(world, iid))
    click = world.press(iid, STOP, OWNER)
    # the same click again (Slack retrying it): the post no longer shows the button
    assert world.slack.action(click).status == 200
    world.slack.settle()
    world.acted()
    assert world.aws.calls["ec2:StopInstances"] == 1
    assert len(world.thread(iid)) == 1 and world.row(iid).action_count == 1
    told = world.slack.fake.calls_to("chat.postEphemeral")[-1].params
    assert "Stop it was already approved for this resource (done: stopped" in told["text"]


def test_two_presses_at_once_act_once(world: World) -> None:
    iid = world.instance({"ml:model": "recsys"})
    world.enable_actions()
    world.post(idle(world, iid))
    channel, message = world.message(iid)
    clicks = [
        button_click(
            user=user,
            action_id=STOP,
            value=str(world.row(iid).id),
            channel=channel,
            message_ts=message["ts"],
            message_text=message["text"],
            message_blocks=message["blocks"],
            response_url=f"{world.slack.fake.url}respond/{user}",
        )
        for user in (OWNER, ADMIN)
    ]
    for click in clicks:  # both acknowledged before either listener finishes
        assert world.slack.action(click).status == 200
    world.slack.settle()
    world.acted()
    assert world.aws.calls["ec2:StopInstances"] == 1
    assert len(world.thread(iid)) == 1 and world.row(iid).action_count == 1


def test_keep_and_not_waste_are_recorded_audited_and_shown(world: World) -> None:
    kept, fine = world.instance({"ml:model": "recsys"}), world.instance({"ml:model": "recsys"})
    world.post(idle(world, kept), idle(world, fine))
    world.press(kept, KEEP, OWNER)
    world.press(fine, NOT_WASTE, ADMIN)
    k, f = world.row(kept), world.row(fine)
    assert (k.decision, k.keep_until) == ("keep", dt.datetime(2026, 11, 27, 12, tzinfo=dt.UTC))
    assert (f.decision, f.decided_by, f.decision_monthly_cost) == (
        "not_waste",
        ADMIN,
        Decimal("734.38"),
    )
    shown = [str(c.params["blocks"]) for c in world.slack.fake.calls_to("chat.update")]
    assert (
        "kept until Nov 27, 2026; raised again if its monthly cost grows past $1,101.57" in shown[0]
    )
    assert "marked not waste; raised again if its monthly cost grows past $1,101.57" in shown[1]
    audit = {a.action: a.detail for a in world.audit()}
    assert audit["waste_resource_keep"]["before"]["decision"] == "none"
    assert audit["waste_resource_not_waste"]["after"]["decision"] == "not_waste"
    assert world.state(kept) == world.state(fine) == "running"


def test_an_unowned_finding_goes_to_finops_and_only_admins_decide(world: World) -> None:
    iid = world.instance()
    world.post(idle(world, iid, model=None))
    channel, _ = world.message(iid)
    assert channel == "C0FINOPS"
    world.press(iid, KEEP, OWNER)
    assert "only an admin can decide on it" in world.slack.responses(1)[0]["text"]
    assert world.row(iid).decision == "none"
    world.press(iid, KEEP, ADMIN)
    assert world.row(iid).decision == "keep"


def test_stop_it_frees_the_listener_while_aws_acts(world: World) -> None:
    iid = world.instance({"ml:model": "recsys"})
    world.enable_actions()
    world.post(idle(world, iid))
    release, calling = threading.Event(), threading.Event()

    def slow_stop(**_: Any) -> None:  # AWS taking its time (a snapshot waiter: up to 20 min)
        calling.set()
        release.wait(10)

    world.aws("ec2", REGION).meta.events.register("before-call.ec2.StopInstances", slow_stop)
    try:
        world.press(iid, STOP, OWNER, wait=False)  # settles: the listener has returned
        assert calling.wait(10)  # while the action is inside StopInstances
        assert world.state(iid) == "running" and world.row(iid).action_result == "acting"
        updated = world.slack.fake.calls_to("chat.update")[-1].params
        assert "Stop it approved: acting now" in str(updated["blocks"])
        assert world.thread(iid) == []
    finally:
        release.set()
    world.acted()
    assert world.state(iid) in ("stopping", "stopped")
    (reply,) = world.thread(iid)
    assert f"done: stopped {iid}" in reply
    assert f"Stop it approved: done: stopped {iid}" in str(
        world.slack.fake.calls_to("chat.update")[-1].params["blocks"]
    )


class DeadProcess:
    """A background that dies before running what it was handed (a crash after the claim)."""

    def submit(self, fn: Any, *args: Any) -> bool:
        return True

    def wait(self, timeout: float) -> bool:
        return True


def test_a_stop_claimed_by_a_process_that_died_is_retried_once_after_the_lease(
    world: World,
) -> None:

    iid = world.instance({"ml:model": "recsys"})
    world.enable_actions()
    world.post(idle(world, iid))
    services = world.slack.services
    services.background = DeadProcess()  # type: ignore[assignment]
    world.press(iid, STOP, OWNER)
    assert world.row(iid).action_result == "acting" and world.aws.calls["ec2:StopInstances"] == 0
    pressed = services.clock()

    # the lease runs by the database's clock: a host whose clock runs ahead does not take it
    services.clock = lambda: pressed + dt.timedelta(minutes=61)
    world.age_claim(iid, dt.timedelta(minutes=59))  # still leased: maybe acting
    assert run_job(services, "resource-stop-retry") == []
    assert world.aws.calls["ec2:StopInstances"] == 0

    world.age_claim(iid, dt.timedelta(minutes=2))  # claimed 61 minutes ago
    (retried,) = run_job(services, "resource-stop-retry")
    assert retried == world.row(iid).id
    assert world.aws.calls["ec2:StopInstances"] == 1 and world.state(iid) in ("stopping", "stopped")
    row = world.row(iid)
    assert row.action_count == 1 and row.action_result is not None
    assert row.action_result.startswith(f"done: stopped {iid}")
    (reply,) = world.thread(iid)
    assert f"Stop it by <@{OWNER}>" in str(world.slack.fake.calls_to("chat.postMessage")[-1].params)
    assert f"done: stopped {iid}" in reply
    assert f"Stop it approved: done: stopped {iid}" in str(
        world.slack.fake.calls_to("chat.update")[-1].params["blocks"]
    )
    actions = [a.action for a in world.audit()]
    assert actions == ["waste_resource_stop", "waste_resource_stop_retry", "waste_resource_action"]

    services.clock = lambda: pressed + dt.timedelta(hours=3)  # done: never again
    assert run_job(services, "resource-stop-retry") == []
    assert world.aws.calls["ec2:StopInstances"] == 1
