"""Resource findings across scans: posted once, again only when worse, silenced, closed."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.schema import AuditLog, OutboxMessage, ResourceFindingRecord
from bot.errors import PermissionDenied
from bot.waste.catalog import scanners
from bot.waste.lifecycle import (
    approve_stop,
    check_can_decide,
    closed_findings,
    complete_scopes,
    record_scan,
    record_silence,
    saved_so_far,
)
from bot.waste.scan.model import (
    Action,
    Reason,
    Recommendation,
    Resource,
    ResourceFinding,
    ResourceKind,
)
from bot.waste.scan.run import ScanFailure, ScanReport
from tests.support.outbox import rendered
from tests.support.sample_registry import load_registry

ACCOUNT = "123456789012"
REGION = "us-east-1"
T0 = dt.datetime(2026, 11, 2, 7, 30, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)
ALL = {(REGION, str(k)) for k in ResourceKind}


def finding(
    rid: str,
    cost: str,
    *,
    kind: ResourceKind = ResourceKind.GPU_INSTANCE,
    model: str | None = None,
    team: str | None = None,
    region: str = REGION,
) -> ResourceFinding:
    resource = Resource(
        kind=kind,
        resource_id=rid,
        account=ACCOUNT,
        region=region,
        resource_type="g5.xlarge",
        model=model,
        team=team,
        target=(("instance_id", rid),),
    )
    return ResourceFinding(
        resource=resource,
        reason=Reason.IDLE,
        evidence=f"{rid} averaged 0.4 % GPU over 7 days",
        signal="nvidia_smi_utilization_gpu",
        monthly_cost=Decimal(cost),
        price_source="price table (test)",
        recommendation=Recommendation(Action.STOP_INSTANCES, "stop it", Decimal(cost)),
    )


def scan(session: Session, now: dt.datetime, *found: ResourceFinding, complete: object = ALL):
    return record_scan(session, list(found), now, account=ACCOUNT, complete=complete)  # type: ignore[arg-type]


def outbox(session: Session) -> dict[str, OutboxMessage]:
    return {m.dedupe_key: m for m in session.scalars(select(OutboxMessage))}


def row_of(session: Session, rid: str) -> ResourceFindingRecord:
    return session.scalars(
        select(ResourceFindingRecord).where(ResourceFindingRecord.resource_id == rid)
    ).one()


@pytest.fixture
def registry(session: Session) -> Session:
    load_registry(session)
    return session


def test_each_finding_is_posted_once_to_its_owner_or_finops(registry: Session) -> None:
    session = registry
    owned = finding("i-owned", "730", model="recsys", team="ranking")
    unowned = finding("i-unowned", "1200")
    first = scan(session, T0, owned, unowned)
    assert sorted(first.new) == [
        f"{ACCOUNT}/{REGION}/gpu_instance/i-owned",
        f"{ACCOUNT}/{REGION}/gpu_instance/i-unowned",
    ]
    posts = outbox(session)
    ids = {rid: row_of(session, rid).id for rid in ("i-owned", "i-unowned")}
    mine, finops = (
        posts[f"waste-resource:{ids['i-owned']}:1"],
        posts[f"waste-resource:{ids['i-unowned']}:1"],
    )
    assert (mine.channel, finops.channel) == ("C0RANKING", "C0FINOPS")
    assert rendered(mine)[0].startswith("Waste: GPU instance i-owned costs $730.00 a month")
    assert "<@U0AAA111>" in str(rendered(mine)[1])
    buttons = next(b for b in rendered(mine)[1] if b["type"] == "actions")["elements"]
    assert [e["text"]["text"] for e in buttons] == ["Stop it", "Keep for 7 days", "Not waste"]
    assert {e["value"] for e in buttons} == {str(ids["i-owned"])}

    again = scan(session, T0 + DAY, owned, unowned)
    assert again.posted == [] and len(again.unchanged) == 2 and again.posts == []
    assert len(outbox(session)) == 2
    row = row_of(session, "i-owned")
    assert (row.first_seen, row.last_seen, row.post_count) == (T0, T0 + DAY, 1)


def test_a_finding_is_posted_again_only_when_more_than_half_worse(registry: Session) -> None:
    session = registry
    scan(session, T0, finding("i-1", "1000"))
    # 50 % worse exactly is not "more than half"
    assert scan(session, T0 + DAY, finding("i-1", "1500")).posted == []
    worse = scan(session, T0 + 2 * DAY, finding("i-1", "1500.01"))
    assert len(worse.worse) == 1
    row = row_of(session, "i-1")
    assert (row.post_count, row.last_posted_monthly_cost) == (2, Decimal("1500.01"))
    assert row.raised_monthly_cost == Decimal("1000")
    repost = outbox(session)[f"waste-resource:{row.id}:2"]
    assert "Posted again:* its monthly cost grew from $1,000.00 to $1,500.01" in str(
        rendered(repost)[1]
    )
    # the next threshold is measured from the last post, not from the first
    assert scan(session, T0 + 3 * DAY, finding("i-1", "2200")).posted == []
    assert len(scan(session, T0 + 4 * DAY, finding("i-1", "2300")).worse) == 1


def test_keep_silences_for_seven_days_then_the_finding_comes_back(registry: Session) -> None:
    session = registry
    f = finding("i-kept", "1000", model="recsys", team="ranking")
    scan(session, T0, f)
    row = row_of(session, "i-kept")
    record_silence(session=session, finding_id=row.id, user_id="U0AAA111", decision="keep", now=T0)
    assert row.keep_until == T0 + 7 * DAY and row.decision_monthly_cost == Decimal("1000")
    # 40 % worse during the keep: silenced (and it would have been silenced anyway)
    during = scan(session, T0 + 6 * DAY, finding("i-kept", "1400", model="recsys"))
    assert during.silenced == [f"{ACCOUNT}/{REGION}/gpu_instance/i-kept"] and during.posts == []
    after = scan(
        session, T0 + 7 * DAY + dt.timedelta(hours=1), finding("i-kept", "1400", model="recsys")
    )
    assert len(after.reraised) == 1
    assert row.decision == "none" and row.post_count == 2
    text = str(rendered(outbox(session)[f"waste-resource:{row.id}:2"])[1])
    assert "it was kept until Nov 9, 2026 and is still found" in text


def test_keep_and_not_waste_are_lifted_when_the_cost_grows_by_more_than_half(
    registry: Session,
) -> None:
    session = registry
    scan(session, T0, finding("i-kept", "1000"), finding("i-fine", "1000"))
    kept, fine = row_of(session, "i-kept"), row_of(session, "i-fine")
    for row, decision in ((kept, "keep"), (fine, "not_waste")):
        record_silence(
            session=session, finding_id=row.id, user_id="U0ADMIN01", decision=decision, now=T0
        )
    # a month later: Not waste still holds at +50 %, Keep has expired (posted again)
    month = scan(session, T0 + 30 * DAY, finding("i-kept", "1000"), finding("i-fine", "1500"))
    assert month.silenced == [f"{ACCOUNT}/{REGION}/gpu_instance/i-fine"]
    assert month.reraised == [f"{ACCOUNT}/{REGION}/gpu_instance/i-kept"]
    grown = scan(session, T0 + 31 * DAY, finding("i-kept", "1000"), finding("i-fine", "1500.01"))
    assert grown.reraised == [f"{ACCOUNT}/{REGION}/gpu_instance/i-fine"]
    assert fine.decision == "none" and fine.post_count == 2
    lifted = session.scalars(
        select(AuditLog).where(AuditLog.action == "waste_resource_reraise")
    ).all()
    assert [(a.actor, a.detail["before"]["decision"]) for a in lifted] == [
        ("mlcost", "keep"),
        ("mlcost", "not_waste"),
    ]
    text = str(rendered(outbox(session)[f"waste-resource:{fine.id}:2"])[1])
    assert "grew from $1,000.00 when it was marked Not waste to $1,500.01" in text


def test_not_waste_is_remembered_for_good(registry: Session) -> None:
    session = registry
    scan(session, T0, finding("i-fine", "1000"))
    row = row_of(session, "i-fine")
    record_silence(
        session=session, finding_id=row.id, user_id="U0ADMIN01", decision="not_waste", now=T0
    )
    for n in range(1, 4):
        assert scan(session, T0 + 100 * n * DAY, finding("i-fine", "1200")).posts == []
    assert row.post_count == 1


def test_a_gone_resource_closes_with_what_it_saved_so_far(registry: Session) -> None:
    session = registry
    scan(session, T0, finding("i-gone", "900", model="recsys", team="ranking"))
    row = row_of(session, "i-gone")
    closed = scan(session, T0 + 2 * DAY)
    # $900/month × 2 days / 30 days = $60.00, counted from the last scan that saw it
    assert closed.closed == [(f"{ACCOUNT}/{REGION}/gpu_instance/i-gone", Decimal("60.00"))]
    assert (row.status, row.closed_at, row.saved_so_far) == (
        "closed",
        T0 + 2 * DAY,
        Decimal("60.00"),
    )
    reply = next(m for k, m in outbox(session).items() if ":closed:" in k)
    assert reply.thread_key == f"waste-resource:{row.id}:1" and reply.channel == "C0RANKING"
    assert reply.kind == "waste-resource-reply"
    assert "Closed: i-gone is no longer found by the scan" in rendered(reply)[0]
    assert "Saved so far: $60.00" in rendered(reply)[0]
    # it grows afterwards, in reports
    assert saved_so_far(row, T0 + 32 * DAY) == Decimal("960.00")
    assert closed_findings(session=session, as_of=T0 + 32 * DAY) == [(row, Decimal("960.00"))]
    # closing twice does nothing more
    assert scan(session, T0 + 3 * DAY).closed == []


def test_a_failed_scanner_never_closes_its_findings(registry: Session) -> None:
    session = registry
    gpu = finding("i-gpu", "900")
    vol = finding("vol-1", "40", kind=ResourceKind.EBS_VOLUME)
    west = finding("i-west", "900", region="us-west-2")
    scan(session, T0, gpu, vol, west)
    report = ScanReport(
        account=ACCOUNT,
        regions=(REGION, "us-west-2"),
        findings=(),
        failures=(ScanFailure(REGION, "EC2 GPU instances", "AccessDenied: no"),),
        currency="USD",
    )
    complete = complete_scopes(report, s3_scanned=False)
    assert (REGION, "gpu_instance") not in complete and (REGION, "gpu_fleet") not in complete
    assert (REGION, "ebs_volume") in complete and ("us-west-2", "gpu_instance") in complete
    assert (REGION, "s3_prefix") not in complete  # S3 was not scanned at all
    result = scan(session, T0 + DAY, complete=complete)
    assert [k for k, _ in result.closed] == [
        f"{ACCOUNT}/{REGION}/ebs_volume/vol-1",
        f"{ACCOUNT}/us-west-2/gpu_instance/i-west",
    ]
    assert row_of(session, "i-gpu").status == "open"
    # a scanner this module does not know fails: nothing in that region closes
    unknown = ScanReport(ACCOUNT, (REGION,), (), (ScanFailure(REGION, "EKS", "x"),), "USD")
    assert {r for r, _ in complete_scopes(unknown, s3_scanned=True)} == set()
    assert set(SCAN_LABELS) <= {s.name for s in scanners() if s.per_region}


SCAN_LABELS = [
    "EC2 GPU instances",
    "SageMaker endpoints",
    "SageMaker notebook instances",
    "SageMaker training jobs",
    "EBS volumes",
    "EBS snapshots",
]


def test_a_resource_found_again_after_closing_opens_anew(registry: Session) -> None:
    session = registry
    scan(session, T0, finding("i-back", "900"))
    scan(session, T0 + DAY)
    back = scan(session, T0 + 5 * DAY, finding("i-back", "600"))
    assert len(back.reraised) == 1
    row = row_of(session, "i-back")
    assert (row.status, row.saved_so_far, row.first_seen, row.post_count) == (
        "open",
        None,
        T0 + 5 * DAY,
        2,
    )


def test_only_owners_and_admins_decide_and_refusals_name_the_owners(registry: Session) -> None:
    session = registry
    scan(session, T0, finding("i-owned", "900", model="recsys"), finding("i-none", "900"))
    owned, unowned = row_of(session, "i-owned"), row_of(session, "i-none")
    with pytest.raises(PermissionDenied, match=r"owners of model recsys \(<@U0AAA111>\)"):
        check_can_decide(session=session, finding_id=owned.id, user_id="U0PPP111")
    assert check_can_decide(session=session, finding_id=owned.id, user_id="U0AAA111") is owned
    with pytest.raises(PermissionDenied, match="only an admin"):
        record_silence(
            session=session, finding_id=unowned.id, user_id="U0AAA111", decision="keep", now=T0
        )
    assert unowned.decision == "none"
    assert check_can_decide(session=session, finding_id=unowned.id, user_id="U0ADMIN01")


def test_stop_it_claims_the_action_once_and_audits_before_and_after(registry: Session) -> None:
    session = registry
    scan(session, T0, finding("i-stop", "900", model="recsys"))
    row = row_of(session, "i-stop")
    first = approve_stop(session=session, finding_id=row.id, user_id="U0AAA111", now=T0)
    second = approve_stop(session=session, finding_id=row.id, user_id="U0AAA111", now=T0)
    assert (first.acts, second.acts) == (True, False)
    assert second.previous_result == "acting" and row.action_count == 1
    audit = session.scalars(select(AuditLog).where(AuditLog.action == "waste_resource_stop")).one()
    assert audit.detail["before"]["decision"] == "none"
    assert audit.detail["after"]["decision"] == "stop"
    assert audit.detail["after"]["action_result"] == "acting"


def test_a_claim_left_by_a_dead_process_expires_after_an_hour(registry: Session) -> None:
    session = registry
    scan(session, T0, finding("i-stop", "900", model="recsys"))
    row = row_of(session, "i-stop")
    assert approve_stop(session=session, finding_id=row.id, user_id="U0AAA111", now=T0).acts
    # the lease runs by the database's clock: a host clock 61 minutes on does not expire it
    ahead = T0 + dt.timedelta(minutes=61)
    assert not approve_stop(session=session, finding_id=row.id, user_id="U0AAA111", now=ahead).acts
    assert row.action_at is not None
    row.action_at -= dt.timedelta(minutes=59)  # claimed 59 minutes ago by the database's clock
    session.flush()
    assert not approve_stop(session=session, finding_id=row.id, user_id="U0AAA111", now=ahead).acts
    row.action_at -= dt.timedelta(minutes=2)
    session.flush()
    again = approve_stop(session=session, finding_id=row.id, user_id="U0AAA111", now=ahead)
    assert again.acts and again.number == 2
