"""Waste findings on a small synthetic ledger with known answers."""

from __future__ import annotations

import datetime as dt
import json
import logging
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.schema import IngestionRun, Review, ReviewItem
from bot.notify.outbox import PlannedPost
from bot.poll import plan as poll_plan
from bot.poll.cycle import queue_posts
from bot.poll.plan import plan_alerts
from bot.registry.spec import parse_registry
from bot.registry.sync import import_registry
from bot.waste.findings import find_waste
from bot.waste.spot import SpotAdvisor
from tests.support.alert_walk import ALERT_REGISTRY
from tests.support.economics_seed import add_value
from tests.support.ledger import ingestion_run, roll_up, spend_record
from tests.support.outbox import rendered

AS_OF = dt.date(2026, 11, 30)


def spend(
    session: Session,
    run: IngestionRun,
    model: str | None,
    stage: str,
    resource: str,
    daily: str,
    days: int = 40,
    tag: str | None = None,
    gpu: str = "0",
    instance: str | None = None,
) -> None:
    for i in range(days):
        session.add(
            spend_record(
                run,
                AS_OF - dt.timedelta(days=i),
                daily,
                resource_id=resource,
                stage=stage,
                model=model,
                team="t" if model else None,
                model_tag_value=tag or model,
                gpu_hours=Decimal(gpu),
                instance_type=instance,
            )
        )


def ledger(session: Session) -> IngestionRun:
    return ingestion_run(session, location="test")


def test_findings_with_known_run_rates(session: Session) -> None:
    run = ledger(session)
    spend(session, run, None, "storage", "arn:aws:s3:::legacy", "10", tag="legacy-ranker")
    spend(session, run, "mature", "storage", "arn:aws:s3:::mature-ckpt", "7")
    spend(session, run, "busy", "training", "i-busy", "50")
    spend(session, run, "busy", "storage", "arn:aws:s3:::busy-ckpt", "7")
    spend(session, run, "idle", "serving", "arn:endpoint/idle", "14")
    spend(session, run, "served", "serving", "arn:endpoint/served", "14")
    spend(session, run, "tiny", "serving", "arn:endpoint/tiny", "0.10")
    for i in range(7):
        add_value(session, "served", AS_OF - dt.timedelta(days=i), 1000, source="manual")
    review = Review(month="2026-11", team_name="t", channel="C1")
    session.add(review)
    session.flush()
    session.add(
        ReviewItem(
            review_id=review.id,
            model_name="busy",
            decision="kill",
            decided_by="U1",
            decided_at=dt.datetime(2026, 11, 27, 9, tzinfo=dt.UTC),
        )
    )
    roll_up(session)

    found = {
        (f.kind, f.model or f.subject): f.monthly_cost
        for f in find_waste(session=session, as_of=AS_OF)
    }
    assert found == {
        ("orphaned", "`legacy-ranker`"): Decimal("300.00"),
        ("stale_checkpoints", "mature"): Decimal("210.00"),
        ("idle_endpoint", "idle"): Decimal("420.00"),
        # busy was killed on the 27th: 3 days of training + storage since = $171/day.
        ("killed_still_spending", "busy"): Decimal("1710.00"),
    }


@mock_aws
def test_idle_gpu_instances_from_cloudwatch(session: Session) -> None:
    run = ledger(session)
    spend(session, run, "trainer", "training", "i-idlegpu", "40", gpu="24", instance="g5.xlarge")
    spend(session, run, "trainer", "training", "i-busygpu", "40", gpu="24", instance="g5.xlarge")
    session.flush()
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    for instance, cpu in (("i-idlegpu", 1.5), ("i-busygpu", 63.0)):
        cloudwatch.put_metric_data(
            Namespace="AWS/EC2",
            MetricData=[
                {
                    "MetricName": "CPUUtilization",
                    "Value": cpu,
                    "Unit": "Percent",
                    "Dimensions": [{"Name": "InstanceId", "Value": instance}],
                    "Timestamp": dt.datetime(2026, 11, 28, 12, tzinfo=dt.UTC),
                }
            ],
        )
    findings = [
        f
        for f in find_waste(session=session, as_of=AS_OF, cloudwatch=cloudwatch)
        if f.kind == "idle_gpu"
    ]
    assert [(f.resource_id, f.monthly_cost) for f in findings] == [
        ("i-idlegpu", Decimal("1200.00"))
    ]


def test_weekly_waste_digests_go_to_the_owners_channels_once_a_week(session: Session) -> None:
    import_registry(parse_registry(ALERT_REGISTRY), session=session, actor="test")
    run = ledger(session)
    # alpha (channel C0ALPHA) keeps an idle endpoint; beta (team ranking's C0RANKING) stale
    # checkpoints; spend tagged for an unregistered model goes to FinOps
    spend(session, run, "alpha", "serving", "arn:endpoint/alpha", "14")
    spend(session, run, "beta", "storage", "arn:aws:s3:::beta-ckpt", "7")
    spend(session, run, None, "storage", "arn:aws:s3:::legacy", "10", tag="legacy-ranker")
    spend(session, run, "gamma", "serving", "arn:endpoint/gamma", "14")  # serving, with value
    for i in range(14):
        add_value(session, "gamma", AS_OF - dt.timedelta(days=i), 1000, source="manual")
    roll_up(session)
    settings = Settings(database_url="sqlite://")
    now = dt.datetime(2026, 12, 1, 6, tzinfo=dt.UTC)

    def plan(as_of: dt.date) -> dict[str, PlannedPost]:
        report = plan_alerts(
            session=session, settings=settings, as_of=as_of, now=now, checks=("waste",)
        )
        return {p.channel: p for p in report.planned}

    # Monday Nov 30: the last complete week is Nov 23-29 (AS_OF is that Monday)
    posts = plan(AS_OF)
    assert set(posts) == {"C0ALPHA", "C0RANKING", "C0FINOPS"}
    assert {p.dedupe_key for p in posts.values()} == {
        "waste:2026-11-23:C0ALPHA",
        "waste:2026-11-23:C0RANKING",
        "waste:2026-11-23:C0FINOPS",
    }
    alpha = json.dumps(rendered(posts["C0ALPHA"])[1])
    assert "week of Nov 23–29" in rendered(posts["C0ALPHA"])[0] and "$420/month" in alpha
    assert "<@U0AAA111>" in alpha and "beta" not in alpha
    ranking = json.dumps(rendered(posts["C0RANKING"])[1])
    assert "Stale checkpoints" in ranking and "<@U0BBB111>" in ranking
    assert "legacy-ranker" in json.dumps(rendered(posts["C0FINOPS"])[1])

    assert queue_posts(session, posts.values()) == 3
    assert plan(AS_OF + dt.timedelta(days=3)) == {}  # the same week: already queued
    assert plan(AS_OF - dt.timedelta(days=40)) == {}  # the ledger does not cover that week


def test_a_week_whose_digest_is_queued_runs_no_waste_checks_again(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the digest is weekly, the poll every few hours: at 100x the nine checks read the week's
    # ledger for seconds on every poll (issue 24). Once any of the week's digests is in the
    # outbox, later polls of that week skip them; the next week's digest runs them again.
    import_registry(parse_registry(ALERT_REGISTRY), session=session, actor="test")
    run = ledger(session)
    spend(session, run, None, "storage", "arn:aws:s3:::legacy", "10", tag="legacy-ranker")
    session.flush()
    settings = Settings(database_url="sqlite://")
    now = dt.datetime(2026, 12, 1, 6, tzinfo=dt.UTC)

    def plan(as_of: dt.date) -> list[str]:
        report = plan_alerts(
            session=session, settings=settings, as_of=as_of, now=now, checks=("waste",)
        )
        queue_posts(session, report.planned)
        return [p.dedupe_key for p in report.planned]

    assert plan(AS_OF) == ["waste:2026-11-23:C0FINOPS"]
    checked: list[dt.date] = []
    real_overview = poll_plan.waste_overview

    def counting_overview(**kwargs: Any) -> Any:
        checked.append(kwargs["as_of"])
        return real_overview(**kwargs)

    monkeypatch.setattr(poll_plan, "waste_overview", counting_overview)
    assert plan(AS_OF + dt.timedelta(days=2)) == []  # Wednesday of the same week
    assert checked == []
    for day in range(1, 7):  # the ledger reaches Sunday Dec 6
        when = AS_OF + dt.timedelta(days=day)
        record = spend_record(run, when, "10", resource_id="arn:aws:s3:::legacy", stage="storage")
        record.model_tag_value = "legacy-ranker"
        session.add(record)
    session.flush()
    assert plan(AS_OF + dt.timedelta(days=7)) == ["waste:2026-11-30:C0FINOPS"]
    assert checked == [dt.date(2026, 12, 6)]  # the next week's digest ran them, once


FEED = {
    "ranges": [
        {"index": i, "label": label}
        for i, label in enumerate(("<5%", "5-10%", "10-15%", "15-20%", ">20%"))
    ],
    "spot_advisor": {
        "us-east-1": {
            "Linux": {
                "p4d.24xlarge": {"s": 60, "r": 1},
                "g5.12xlarge": {"s": 58, "r": 4},
            }
        }
    },
}


def training(
    session: Session,
    run: IngestionRun,
    model: str,
    instance: str,
    billed: str,
    effective: str,
    *,
    usage_type: str | None = None,
    region: str | None = "us-east-1",
    stage: str = "training",
) -> None:
    for i in range(7):
        session.add(
            spend_record(
                run,
                AS_OF - dt.timedelta(days=i),
                billed,
                effective=effective,
                service="Amazon Elastic Compute Cloud",
                resource_id=f"i-{model}-{instance}",
                stage=stage,
                model=model,
                team="t",
                instance_type=instance,
                region=region,
                usage_type=usage_type or f"USE1-BoxUsage:{instance}",
            )
        )


def test_spot_candidates_are_on_demand_training_where_spot_is_cheap_and_steady(
    session: Session,
) -> None:
    run = ledger(session)
    training(session, run, "alpha", "p4d.24xlarge", "100", "100")  # on-demand
    training(session, run, "beta", "p4d.24xlarge", "100", "72")  # a Savings Plan covers it
    training(
        session, run, "gamma", "p4d.24xlarge", "40", "40", usage_type="USE1-SpotUsage:p4d.24xlarge"
    )  # already on Spot
    training(session, run, "delta", "g5.12xlarge", "100", "100")  # Spot interrupted > 20 %
    training(session, run, "eps", "p4d.24xlarge", "100", "100", stage="serving")
    training(session, run, "zeta", "p4d.24xlarge", "100", "100", region=None)
    training(session, run, "eta", "x9.huge", "100", "100")  # not in the feed
    session.flush()
    advisor = SpotAdvisor(FEED)

    found = {
        f.model: f
        for f in find_waste(session=session, as_of=AS_OF, spot=advisor)
        if f.kind == "spot_candidate"
    }
    # alpha: paid 700, Spot 700 x 0.40 = 280, saving 420 a week = 1,800 a month
    # beta: paid 504, Spot 280, saving 224 a week = 960 a month
    assert {m: f.monthly_cost for m, f in found.items()} == {
        "alpha": Decimal("1800.00"),
        "beta": Decimal("960.00"),
    }
    assert "60 % below on-demand" in found["alpha"].evidence
    assert "5-10%" in found["alpha"].evidence and "Savings Plans" not in found["alpha"].evidence
    assert "Savings Plans" in found["beta"].evidence
    assert found["alpha"].subject == "`alpha` training on p4d.24xlarge in us-east-1"

    tolerant = find_waste(session=session, as_of=AS_OF, spot=advisor, spot_max_band=4)
    assert {f.model for f in tolerant if f.kind == "spot_candidate"} == {"alpha", "beta", "delta"}
    assert not [f for f in find_waste(session=session, as_of=AS_OF) if f.kind == "spot_candidate"]


def test_the_weekly_digest_still_posts_when_the_spot_feed_is_unreadable(
    session: Session, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import_registry(parse_registry(ALERT_REGISTRY), session=session, actor="test")
    spend(session, ledger(session), None, "storage", "arn:aws:s3:::legacy", "10", tag="legacy")
    session.flush()
    broken = tmp_path / "feed.json"
    broken.write_text("{")
    settings = Settings(database_url="sqlite://", MLCOST_SPOT_ADVISOR_FILE=str(broken))
    now = dt.datetime(2026, 12, 1, 6, tzinfo=dt.UTC)
    with caplog.at_level(logging.WARNING, logger="bot.waste.findings"):
        report = plan_alerts(
            session=session, settings=settings, as_of=AS_OF, now=now, checks=("waste",)
        )
    assert [p.dedupe_key for p in report.planned] == ["waste:2026-11-23:C0FINOPS"]
    assert "no Spot candidates this time: cannot read the Spot Instance Advisor feed" in caplog.text


def test_serving_that_does_not_follow_a_weekly_traffic_swing(session: Session) -> None:
    run = ledger(session)
    # AS_OF is Monday Nov 30: the two weeks back hold four weekend days (21, 22, 28, 29)
    spend(session, run, "steady", "serving", "arn:endpoint/steady", "100", days=14)
    spend(session, run, "flat-traffic", "serving", "arn:endpoint/flat", "100", days=14)
    for i in range(14):
        day = AS_OF - dt.timedelta(days=i)
        weekend = day.weekday() >= 5
        for model, units in (
            ("steady", 300 if weekend else 1000),
            ("flat-traffic", 800),
            ("scaled", 300 if weekend else 1000),
        ):
            add_value(session, model, day, units)
        # a CloudWatch count for the same day must not be added to the CSV one
        add_value(session, "steady", day, 5, source="cloudwatch")
        session.add(
            spend_record(
                run,
                day,
                30 if weekend else 100,
                effective=100,
                resource_id="arn:endpoint/scaled",
                stage="serving",
                model="scaled",
                team="t",
            )
        )
    roll_up(session)

    found = [f for f in find_waste(session=session, as_of=AS_OF) if f.kind == "fixed_serving"]
    assert [f.model for f in found] == ["steady"]
    # four weekend days at 30 % of the weekday peak: 4 x $100 x 0.7 = $280 in 14 days
    assert found[0].monthly_cost == Decimal("600.00")
    assert "carried 30% of the predictions of its busiest" in found[0].evidence
    assert "serving cost 100% as much" in found[0].evidence
