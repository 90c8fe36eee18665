"""Record a resource scan and post what is due (`mlcost waste scan --post`); the waste jobs.

`waste_jobs` declares the daily resource scan and the retry of Stop it actions a dead process
left claimed; the composition root hands in what they use.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from bot.config import ScanSettings, WasteSettings
from bot.db.engine import session_scope
from bot.notify.delivery import DeliveryEdge, DeliveryReport, deliver_pending, outbox_timing
from bot.notify.schedule import DailyAt, Every, JobSpec
from bot.registry.stored import attribution_spec
from bot.waste.lifecycle import (
    POST_KIND,
    REPLY_KIND,
    SUMMARY_KIND,
    LifecycleReport,
    PostingPolicy,
    record_report,
)
from bot.waste.scan.context import ScanPolicy, policy_from_settings
from bot.waste.scan.run import ScanReport
from bot.waste.stopping import STOP_RETRY_MINUTES, AwsClientFactory, Clock, resume_stale_stops

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PostedScan:
    """A recorded scan: what the lifecycle changed and what was delivered (None: not tried)."""

    lifecycle: LifecycleReport
    delivery: DeliveryReport | None


def s3_was_scanned(settings: ScanSettings) -> bool:
    """Say whether scan_account ran the S3 scanner (it does when patterns are configured)."""
    return bool(settings.scan_s3_patterns)


def posting_policy(settings: WasteSettings) -> PostingPolicy:
    """Return the posting floor and per-channel cap the settings name."""
    return PostingPolicy(settings.scan_min_monthly, settings.scan_max_posts_per_channel)


def post_scan(
    report: ScanReport,
    *,
    deliver: bool = True,
    session_factory: sessionmaker[Session],
    settings: ScanSettings,
    clock: Clock,
    edge: DeliveryEdge,
) -> PostedScan:
    """Record the scan's findings (one transaction), then deliver the posts that are due."""
    now = clock()
    with session_scope(session_factory) as session:
        lifecycle = record_report(
            session=session,
            report=report,
            now=now,
            s3_scanned=s3_was_scanned(settings),
            policy=posting_policy(settings),
        )
    delivery = None
    if deliver:
        delivery = deliver_pending(
            session_factory=session_factory,
            edge=edge,
            kinds=(POST_KIND, REPLY_KIND, SUMMARY_KIND),
            timing=outbox_timing(settings),
        )
    return PostedScan(lifecycle, delivery)


def scan_policy(*, session: Session, settings: ScanSettings) -> ScanPolicy:
    """Return the scan policy, reading a resource's model and team from the tag keys attribution
    reads: the registry's, else the settings' (as ingestion does)."""
    keys = attribution_spec(session, defaults=settings)
    return policy_from_settings(
        settings, model_tag_keys=keys.model_tag_keys, team_tag_keys=keys.team_tag_keys
    )


def scan_regions(
    regions: Sequence[str],
    *,
    session_factory: sessionmaker[Session],
    settings: ScanSettings,
    clock: Clock,
    aws: AwsClientFactory,
) -> ScanReport:
    """Scan the account in these regions as `mlcost waste scan` does."""
    from bot.waste.pricing import load_price_table
    from bot.waste.scan.context import ScanContext
    from bot.waste.scan.ledger import ledger_view
    from bot.waste.scan.run import account_id, scan_account

    now = clock()
    with session_scope(session_factory) as session:
        ledger = ledger_view(
            session=session, as_of=now.date() - dt.timedelta(days=1), currency=settings.currency
        )
        policy = scan_policy(session=session, settings=settings)
    ctx = ScanContext(
        account=account_id(aws, regions[0]),
        now=now,
        policy=policy,
        ledger=ledger,
        prices=load_price_table(settings.price_table_file),
    )
    return scan_account(aws, regions, ctx)


def run_resource_scan_job(
    *,
    session_factory: sessionmaker[Session],
    settings: ScanSettings,
    clock: Clock,
    aws: AwsClientFactory,
    edge: DeliveryEdge,
) -> PostedScan | None:
    """The daily job: scan MLCOST_SCAN_REGIONS, record, post what is due (None: no regions)."""
    regions = settings.scan_regions
    if not regions:
        return None
    report = scan_regions(
        regions, session_factory=session_factory, settings=settings, clock=clock, aws=aws
    )
    posted = post_scan(
        report,
        session_factory=session_factory,
        settings=settings,
        clock=clock,
        edge=edge,
    )
    life = posted.lifecycle
    log.info(
        "resource scan: %d findings, %d posted (%d new), %d closed, %d scanners failed",
        len(report.findings),
        len(life.posted),
        len(life.new),
        len(life.closed),
        len(report.failures),
    )
    return posted


def waste_jobs(
    settings: ScanSettings,
    *,
    session_factory: sessionmaker[Session],
    clock: Clock,
    aws: AwsClientFactory,
    edge: DeliveryEdge,
) -> list[JobSpec]:
    """Declare the daily resource scan when regions are set, and the retry of Stop it actions a
    dead process left claimed when findings are scanned or actions enabled."""
    deps: dict[str, Any] = {
        "session_factory": session_factory,
        "settings": settings,
        "clock": clock,
        "aws": aws,
        "edge": edge,
    }
    jobs = []
    if settings.scan_regions:
        jobs.append(
            JobSpec(
                "resource-scan",
                functools.partial(run_resource_scan_job, **deps),
                DailyAt(settings.scan_hour, 30, settings.timezone),
            )
        )
    if settings.scan_regions or settings.actions_enabled:
        jobs.append(
            JobSpec(
                "resource-stop-retry",
                functools.partial(resume_stale_stops, **deps),
                Every(dt.timedelta(minutes=STOP_RETRY_MINUTES)),
            )
        )
    return jobs
