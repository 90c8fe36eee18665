"""A first scan never floods a channel: a posting floor, a daily cap per channel, one summary."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.schema import OutboxMessage
from bot.waste.lifecycle import PostingPolicy, record_scan
from tests.integration.test_waste_lifecycle import (
    ACCOUNT,
    ALL,
    DAY,
    T0,
    finding,
    row_of,
    scan,
)
from tests.support.outbox import rendered
from tests.support.sample_registry import load_registry


@pytest.fixture
def registry(session: Session) -> Session:
    load_registry(session)
    return session


def posts(session: Session, kind: str = "waste-resource") -> list[OutboxMessage]:
    query = select(OutboxMessage).where(OutboxMessage.kind == kind).order_by(OutboxMessage.id)
    return list(session.scalars(query))


def posted_ids(session: Session) -> set[str]:
    return {rendered(p)[0].split(" ")[3] for p in posts(session)}


def test_findings_under_the_floor_are_recorded_not_posted_until_they_cross_it(
    registry: Session,
) -> None:
    session = registry
    small, big = finding("vol-small", "12.40"), finding("i-big", "730")
    first = scan(session, T0, small, big)
    assert first.new == [f"{ACCOUNT}/us-east-1/gpu_instance/i-big"]
    assert first.below_floor == [f"{ACCOUNT}/us-east-1/gpu_instance/vol-small"]
    assert posted_ids(session) == {"i-big"}
    row = row_of(session, "vol-small")  # recorded: reports and /mlcost waste list it
    assert (row.status, row.post_count, row.monthly_cost) == ("open", 0, small.monthly_cost)

    grown = scan(session, T0 + DAY, finding("vol-small", "50.00"), big)
    assert grown.new == [f"{ACCOUNT}/us-east-1/gpu_instance/vol-small"]
    assert posted_ids(session) == {"i-big", "vol-small"}


def test_the_floor_is_the_operators_to_set(registry: Session) -> None:
    session = registry
    report = record_scan(
        session,
        [finding("vol-small", "12.40")],
        T0,
        account=ACCOUNT,
        complete=ALL,
        policy=PostingPolicy(min_monthly=0),
    )
    assert len(report.new) == 1 and report.below_floor == []


def test_a_first_scan_posts_the_ten_largest_per_channel_and_one_summary(
    registry: Session,
) -> None:
    session = registry
    unowned = [finding(f"i-{n:02d}", f"{n}00") for n in range(1, 15)]  # $100 ... $1,400
    owned = [finding(f"i-own{n}", "900", model="recsys", team="ranking") for n in range(3)]
    first = scan(session, T0, *unowned, *owned)
    assert len(first.new) == 13 and len(first.summarised) == 4
    individual = posts(session)
    finops = [p for p in individual if p.channel == "C0FINOPS"]
    assert len(finops) == 10 and len([p for p in individual if p.channel == "C0RANKING"]) == 3
    assert {rendered(p)[0].split(" ")[3] for p in finops} == {f"i-{n:02d}" for n in range(5, 15)}
    (summary,) = posts(session, "waste-resource-summary")
    assert summary.channel == "C0FINOPS"
    text = rendered(summary)[0]
    assert "4 more resource findings worth $1,000.00 a month" in text
    assert "/mlcost waste" in text
    blocks = str(rendered(summary)[1])
    for rid, cost in (("i-04", "$400.00"), ("i-03", "$300.00"), ("i-01", "$100.00")):
        assert rid in blocks and cost in blocks
    for n in range(1, 5):  # not posted yet: posted one by one when the cap leaves room
        assert row_of(session, f"i-{n:02d}").post_count == 0

    # a re-run the same day: the day's cap is used up and the summary is not posted twice
    rerun = scan(session, T0 + dt.timedelta(hours=2), *unowned, *owned)
    assert rerun.posts == [] and len(rerun.summarised) == 4
    assert len(posts(session)) == 13 and len(posts(session, "waste-resource-summary")) == 1

    # the next day there is room: the rest are posted one by one, with their buttons
    later = scan(session, T0 + DAY, *unowned, *owned)
    assert sorted(later.new) == sorted(
        f"{ACCOUNT}/us-east-1/gpu_instance/i-{n:02d}" for n in range(1, 5)
    )
    assert later.summarised == [] and len(posts(session, "waste-resource-summary")) == 1
    assert posted_ids(session) >= {f"i-{n:02d}" for n in range(1, 15)}


def test_a_worse_finding_competes_for_the_cap_by_its_cost(registry: Session) -> None:
    session = registry
    policy = PostingPolicy(max_posts_per_channel=2)

    def run(now: dt.datetime, *found: object) -> object:
        return record_scan(session, found, now, account=ACCOUNT, complete=ALL, policy=policy)  # type: ignore[arg-type]

    run(T0, finding("i-a", "100"))
    report = run(T0 + DAY, finding("i-a", "1000"), finding("i-b", "200"), finding("i-c", "90"))
    assert report.worse == [f"{ACCOUNT}/us-east-1/gpu_instance/i-a"]  # type: ignore[attr-defined]
    assert report.new == [f"{ACCOUNT}/us-east-1/gpu_instance/i-b"]  # type: ignore[attr-defined]
    assert report.summarised == [f"{ACCOUNT}/us-east-1/gpu_instance/i-c"]  # type: ignore[attr-defined]


def test_reports_say_a_finding_under_the_floor_was_not_posted(registry: Session) -> None:
    from bot.config import Settings
    from bot.slack.blocks.waste import render_waste_json, render_waste_text
    from bot.waste.findings import waste_overview

    session = registry
    scan(session, T0, finding("vol-small", "12.40"), finding("i-big", "730"))
    overview = waste_overview(
        session=session, settings=Settings(), as_of=T0.date(), now=T0 + DAY, strict=False
    )
    text = render_waste_text(overview)
    big_block, small_block = text.split("i-big", 1)[1].split("vol-small", 1)  # largest first
    assert "not posted to Slack: under the $50.00/month posting floor" in small_block
    assert "not posted" not in big_block
    entries = {
        e["resource_id"]: e
        for e in json.loads(render_waste_json(overview, T0.date()))["findings"]
        if "resource_id" in e
    }
    assert (entries["vol-small"]["posted"], entries["vol-small"]["below_posting_floor"]) == (
        False,
        True,
    )
    assert (entries["i-big"]["posted"], entries["i-big"]["below_posting_floor"]) == (True, False)
