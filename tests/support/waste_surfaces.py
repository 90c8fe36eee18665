"""A small organisation with ledger waste and resource findings, for the waste surfaces' tests.

Registry: ALERT_REGISTRY (alpha in C0ALPHA and beta, team ranking's C0RANKING; gamma, team
platform's C0PLATFORM; FinOps C0FINOPS). As of AS_OF (Monday Nov 30), the ledger holds:
- spend tagged legacy-ranker (no registered model) on two resources, $10 and $20 a day: orphaned,
  $900 a month; the scan finds one of them, the $20 box i-legacybox, as an unowned GPU instance;
- alpha's endpoint alpha-prod serving $14 a day with no predictions: an idle endpoint, $420 a
  month; the scan finds the endpoint too (no invocations);
- gamma serving with predictions (so silence about alpha means something).
Resource findings recorded by two scans (FIRST, then LATER six days on):
- i-legacybox, unowned, $700.00; alpha-prod (model alpha), $420.00;
- vol-beta (model beta), $80.00, marked Keep for 7 days by its owner;
- an S3 prefix of gamma's whose id carries Slack markup, $95.50;
- vol-gone (team platform, no model), $60.00, gone at the second scan: closed, $12.00 saved
  then (six days), $14.00 by NOW.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.db.schema import ResourceFindingRecord
from bot.registry.spec import parse_registry
from bot.registry.sync import import_registry
from bot.waste.lifecycle import record_scan, record_silence
from bot.waste.scan.model import (
    Action,
    Reason,
    Recommendation,
    Resource,
    ResourceFinding,
    ResourceKind,
)
from tests.support.alert_walk import ALERT_REGISTRY
from tests.support.economics_seed import add_value
from tests.support.ledger import ingestion_run, roll_up, spend_record

AS_OF = dt.date(2026, 11, 30)
ACCOUNT = "123456789012"
REGION = "us-east-1"
FIRST = dt.datetime(2026, 11, 24, 6, tzinfo=dt.UTC)
LATER = dt.datetime(2026, 11, 30, 6, tzinfo=dt.UTC)
NOW = dt.datetime(2026, 12, 1, 6, tzinfo=dt.UTC)  # the surfaces look at the findings then
HOSTILE = "s3://gamma-ckpt/<!channel> `run` & <https://evil.example|x>/"
ALL = {(REGION, str(k)) for k in ResourceKind}


def resource_finding(
    kind: ResourceKind, rid: str, cost: str, model: str | None = None, team: str | None = None
) -> ResourceFinding:
    """A priced resource finding of the test account."""
    return ResourceFinding(
        resource=Resource(
            kind=kind,
            resource_id=rid,
            account=ACCOUNT,
            region=REGION,
            model=model,
            team=team,
            target=(("id", rid),),
        ),
        reason=Reason.IDLE,
        evidence=f"{rid} did nothing for 7 days",
        signal="test",
        monthly_cost=Decimal(cost),
        price_source="price table (test, 2025-06)",
        recommendation=Recommendation(Action.STOP_INSTANCES, "stop it", Decimal(cost)),
    )


def seed_ledger(session: Session) -> None:
    """The registry and the ledger's spend (see the module docstring)."""
    import_registry(parse_registry(ALERT_REGISTRY), session=session, actor="test")
    run = ingestion_run(session, location="test")
    rows = [
        (None, "storage", "arn:aws:s3:::legacy", "10", "legacy-ranker"),
        (None, "training", "i-legacybox", "20", "legacy-ranker"),
        ("alpha", "serving", "arn:aws:sagemaker:us-east-1:1:endpoint/alpha-prod", "14", "alpha"),
        ("gamma", "serving", "arn:aws:sagemaker:us-east-1:1:endpoint/gamma-prod", "14", "gamma"),
    ]
    for model, stage, resource, daily, tag in rows:
        for i in range(40):
            session.add(
                spend_record(
                    run,
                    AS_OF - dt.timedelta(days=i),
                    daily,
                    resource_id=resource,
                    stage=stage,
                    model=model,
                    team="t" if model else None,
                    model_tag_value=tag,
                )
            )
    for i in range(14):
        add_value(session, "gamma", AS_OF - dt.timedelta(days=i), 1000, source="manual")
    roll_up(session)


def seed_findings(session: Session) -> None:
    """Record the two scans and the Keep decision (see the module docstring)."""
    kinds = ResourceKind
    first = [
        resource_finding(kinds.GPU_INSTANCE, "i-legacybox", "700.00"),
        resource_finding(kinds.SAGEMAKER_ENDPOINT, "alpha-prod", "420.00", model="alpha"),
        resource_finding(kinds.EBS_VOLUME, "vol-beta", "80.00", model="beta"),
        resource_finding(kinds.S3_PREFIX, HOSTILE, "95.50", model="gamma"),
        resource_finding(kinds.EBS_VOLUME, "vol-gone", "60.00", team="platform"),
    ]
    record_scan(session, first, FIRST, account=ACCOUNT, complete=ALL)
    beta = session.scalars(
        select(ResourceFindingRecord).where(ResourceFindingRecord.resource_id == "vol-beta")
    ).one()
    record_silence(
        session=session, finding_id=beta.id, user_id="U0BBB111", decision="keep", now=LATER
    )
    record_scan(session, first[:4], LATER, account=ACCOUNT, complete=ALL)
    session.flush()


def seed_all(session: Session) -> None:
    """The ledger and the findings."""
    seed_ledger(session)
    seed_findings(session)
