"""Record a resource scan and post what is due: `mlcost waste scan --post` and the daily job."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from bot.bootstrap import AppServices
from bot.notify.delivery import DeliveryReport, deliver_pending, outbox_lease
from bot.waste.lifecycle import (
    POST_KIND,
    REPLY_KIND,
    SUMMARY_KIND,
    LifecycleReport,
    PostingPolicy,
    record_report,
)
from bot.waste.scan.run import ScanReport

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PostedScan:
    """A recorded scan: what the lifecycle changed and what was delivered (None: not tried)."""

    lifecycle: LifecycleReport
    delivery: DeliveryReport | None


def s3_was_scanned(services: AppServices) -> bool:
    """Say whether scan_account ran the S3 scanner (it does when patterns are configured)."""
    return bool(services.settings.scan_s3_patterns)


def posting_policy(services: AppServices) -> PostingPolicy:
    """Return the posting floor and per-channel cap the settings name."""
    settings = services.settings
    return PostingPolicy(settings.scan_min_monthly, settings.scan_max_posts_per_channel)


def post_scan(services: AppServices, report: ScanReport, *, deliver: bool = True) -> PostedScan:
    """Record the scan's findings (one transaction), then deliver the posts that are due."""
    now = services.clock()
    with services.unit_of_work() as session:
        lifecycle = record_report(
            session=session,
            report=report,
            now=now,
            s3_scanned=s3_was_scanned(services),
            policy=posting_policy(services),
        )
    delivery = None
    if deliver:
        delivery = deliver_pending(
            session_factory=services.session_factory,
            notifier=services.notifier,
            find_posted=services.find_posted,
            kinds=(POST_KIND, REPLY_KIND, SUMMARY_KIND),
            lease=outbox_lease(services.settings),
        )
    return PostedScan(lifecycle, delivery)


def scan_regions(services: AppServices, regions: Sequence[str]) -> ScanReport:
    """Scan the account in these regions as `mlcost waste scan` does."""
    from bot.waste.pricing import load_price_table
    from bot.waste.scan.context import ScanContext, policy_from_settings
    from bot.waste.scan.ledger import ledger_view
    from bot.waste.scan.run import account_id, scan_account

    settings = services.settings
    now = services.clock()
    with services.unit_of_work() as session:
        ledger = ledger_view(
            session=session, as_of=now.date() - dt.timedelta(days=1), currency=settings.currency
        )
    ctx = ScanContext(
        account=account_id(services.aws, regions[0]),
        now=now,
        policy=policy_from_settings(settings),
        ledger=ledger,
        prices=load_price_table(settings.price_table_file),
    )
    return scan_account(services.aws, regions, ctx)


def run_resource_scan_job(services: AppServices) -> PostedScan | None:
    """The daily job: scan MLCOST_SCAN_REGIONS, record, post what is due (None: no regions)."""
    regions = services.settings.scan_regions
    if not regions:
        return None
    report = scan_regions(services, regions)
    posted = post_scan(services, report)
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
