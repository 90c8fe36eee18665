"""Money that burns silently: orphaned spend, idle endpoints, stale checkpoints, killed models,
and on-demand training that Spot would run for much less.

Each finding carries a monthly run-rate (the last week's cost scaled to 30 days), the evidence,
and the fix. Findings come from the ledger and value metrics; idle GPU instances can also be
confirmed from CloudWatch CPU utilisation when a client is given.

`waste_overview` adds the resource findings of the account scans (the resource_findings table,
bot/waste/lifecycle.py) to the ledger's, ranked together by monthly cost, with what closed
findings saved so far. A resource is listed once: see `merge_ledger_findings`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import select

from bot.config import WasteSettings
from bot.counts import counted
from bot.db import tables
from bot.db.reading import Reader
from bot.errors import NotFoundError, UsageError
from bot.spend.freshness import LedgerFreshness, freshness_line, ledger_freshness
from bot.waste.catalog import ledger_check, ledger_checks, ledger_ids
from bot.waste.checks import (
    RUN_RATE_DAYS,
    LedgerScope,
    WasteFinding,
)
from bot.waste.savings import FindingRow, saved_so_far
from bot.waste.spot import SpotAdvisor, load_spot_advisor

log = logging.getLogger(__name__)

MIN_MONTHLY = Decimal(50)  # below this a finding is noise, not waste
SPOT_MAX_BAND = 2  # recommend Spot where it is interrupted less than 15 % of the time


def find_waste(
    *,
    session: Reader,
    as_of: dt.date,
    cloudwatch: Any | None = None,
    min_monthly: Decimal = MIN_MONTHLY,
    spot: SpotAdvisor | None = None,
    spot_max_band: int = SPOT_MAX_BAND,
    currency: str = "USD",
) -> list[WasteFinding]:
    """Return every waste finding as of a day, largest monthly cost first.

    Findings are in `currency` (the organisation's): spend billed in other currencies is never
    added to it, and is left out. With a Spot advisor, on-demand training on instance types whose
    Spot interruption band is at most `spot_max_band` is a finding too, worth the monthly saving.
    """
    week = (as_of - dt.timedelta(days=RUN_RATE_DAYS - 1), as_of + dt.timedelta(days=1))
    scope = LedgerScope(session, week, as_of, currency, cloudwatch, spot, spot_max_band)
    findings = [f for check in ledger_checks() for f in check.find(scope)]
    return sorted(
        (f for f in findings if f.monthly_cost >= min_monthly),
        key=lambda f: f.monthly_cost,
        reverse=True,
    )


def find_configured_waste(
    *,
    session: Reader,
    settings: WasteSettings,
    as_of: dt.date,
    cloudwatch: Any | None = None,
    strict: bool = True,
) -> list[WasteFinding]:
    """Return find_waste() with the configured Spot advisor feed and interruption band.

    An unreadable feed is an error, unless `strict` is off (scheduled jobs): then it is logged
    and the other findings still come.
    """
    try:
        spot: SpotAdvisor | None = load_spot_advisor(settings.spot_advisor_file)
    except UsageError as exc:
        if strict:
            raise
        log.warning("waste: no Spot candidates this time: %s", exc)
        spot = None
    return find_waste(
        session=session,
        as_of=as_of,
        cloudwatch=cloudwatch,
        spot=spot,
        spot_max_band=settings.spot_max_interruption_band,
        currency=settings.currency,
    )


def _scope(session: Reader, name: str) -> tuple[set[str], str | None]:
    """Return the models a team or model name covers, and the team's name (None for a model).

    An unknown name is NotFound, with the closest names as a hint.
    """
    wanted = name.strip().lower()
    teams = dict(session.execute(select(tables.teams.c.name, tables.teams.c.id)).all())
    models = dict(session.execute(select(tables.models.c.name, tables.models.c.team_id)).all())
    if wanted in teams:
        return {m for m, team_id in models.items() if team_id == teams[wanted]}, wanted
    if wanted in models:
        return {wanted}, None
    close = difflib.get_close_matches(wanted, [*teams, *models], n=3, cutoff=0.5)
    hint = (" Did you mean " + ", ".join(f"`{c}`" for c in close) + "?") if close else ""
    raise NotFoundError(f"No team or model named `{name[:60]}`.{hint}")


# ---- resource findings next to the ledger's ----------------------------------------------------

CENT = Decimal("0.01")
CLOSED_RECENT_DAYS = 30  # closed findings listed one by one for this long; the total counts all
OPEN, CLOSED = "open", "closed"


@dataclass(frozen=True)
class ResourceEntry:
    """A resource finding (one row of resource_findings) as the waste lists show it.

    `silenced`: an owner pressed Keep for 7 days (still in force) or Not waste, so it is listed
    apart and not counted in the waste total. Closed entries carry `saved_so_far`.
    """

    finding_id: int
    kind: str
    resource_id: str
    account: str
    region: str
    model: str | None
    team: str | None
    monthly_cost: Decimal
    monthly_saving: Decimal
    evidence: str
    fix: str
    price_source: str
    currency: str
    status: str = OPEN
    decision: str = "none"
    silenced: bool = False
    keep_until: dt.datetime | None = None
    closed_at: dt.datetime | None = None
    saved_so_far: Decimal | None = None
    action_result: str | None = None  # what an approved Stop it did (lifecycle's words)
    target: tuple[tuple[str, str], ...] = ()
    members: tuple[str, ...] = ()
    posted: bool = True  # posted to its channel at least once
    below_floor: bool = False  # not posted: under the posting floor (MLCOST_SCAN_MIN_MONTHLY)


def resource_entry(row: FindingRow, now: dt.datetime) -> ResourceEntry:
    """Return a resource_findings row as an entry (saved so far worked out as of `now`)."""
    details = row.details or {}
    fix = details.get("recommendation") or {}
    keep_in_force = row.decision == "keep" and (row.keep_until is None or row.keep_until > now)
    return ResourceEntry(
        finding_id=row.id,
        kind=row.kind,
        resource_id=row.resource_id,
        account=row.account,
        region=row.region,
        model=row.model,
        team=row.team,
        monthly_cost=row.monthly_cost.quantize(CENT),
        monthly_saving=Decimal(str(fix.get("monthly_saving", row.monthly_cost))).quantize(CENT),
        evidence=str(details.get("evidence", "")),
        fix=str(fix.get("text", "")),
        price_source=str(details.get("price_source", "")),
        currency=row.currency,
        status=row.status,
        decision=row.decision,
        silenced=keep_in_force or row.decision == "not_waste",
        keep_until=row.keep_until,
        closed_at=row.closed_at,
        saved_so_far=saved_so_far(row, now),
        action_result=row.action_result,
        target=tuple(sorted((str(k), str(v)) for k, v in (row.target or {}).items())),
        members=tuple(str(m) for m in details.get("members") or ()),
        posted=row.post_count > 0,
    )


def resource_entries(
    *,
    session: Reader,
    now: dt.datetime,
    currency: str,
    status: str = OPEN,
    models: Iterable[str] | None = None,
) -> list[ResourceEntry]:
    """Return the resource findings of a status in one currency, costliest first."""
    found = tables.resource_findings.c
    query = select(tables.resource_findings).where(
        found.status == status, found.currency == currency
    )
    if models is not None:
        query = query.where(found.model.in_(list(models)))
    rows = session.execute(query.order_by(found.id))
    entries = [resource_entry(row, now) for row in rows]
    return sorted(entries, key=lambda e: (-e.monthly_cost, e.resource_id))


def covered_ids(entry: ResourceEntry) -> set[str]:
    """Return the ledger resource ids (lower-cased) whose spend a resource finding stands for.

    The same ids the scan priced it from (bot/waste/scan): an instance or volume id, a fleet's
    instances, `endpoint/NAME`, `notebook-instance/NAME`, `training-job/NAME`. An S3 prefix stands
    for none: the ledger bills the bucket, which holds more than the prefix.
    """
    return ledger_ids(entry.kind, entry.resource_id, dict(entry.target), entry.members)


def _ledger_resources(
    session: Reader, finding: WasteFinding, week: tuple[dt.date, dt.date], currency: str
) -> dict[str | None, Decimal] | None:
    """Return the week's cost of each ledger resource a finding is made of (None: not a sum of
    resources, such as a Spot saving or serving that does not scale)."""
    check = ledger_check(finding.kind)
    if check is None or check.made_of is None:
        return None
    return check.made_of(session, finding, week, currency)


def merge_ledger_findings(
    *,
    session: Reader,
    findings: Sequence[WasteFinding],
    resources: Sequence[ResourceEntry],
    as_of: dt.date,
    currency: str,
    min_monthly: Decimal = MIN_MONTHLY,
) -> tuple[list[WasteFinding], list[WasteFinding]]:
    """Return (the ledger findings still listed, those now listed under their resource).

    A resource is listed once. Every open resource finding (silenced ones too: their decision
    stands for the resource) covers the ledger resource ids the scan priced it from
    (`covered_ids`). A ledger finding made of ledger resources (orphaned tag, idle endpoint,
    killed model, stale checkpoint, idle GPU) loses the covered resources' share of its week's
    cost; when nothing is left (or less than `min_monthly`), it is listed only as the resource
    findings. Spot candidates and serving that does not scale are savings on how a model runs,
    not resources to remove, and always stay. Matching is by resource id, lower-cased, ARNs
    also by their `type/name` part and a trailing instance, volume or snapshot id.
    """
    from bot.waste.scan.ledger import ledger_keys

    covered = set().union(*(covered_ids(e) for e in resources)) if resources else set()
    if not covered:
        return list(findings), []
    week = (as_of - dt.timedelta(days=RUN_RATE_DAYS - 1), as_of + dt.timedelta(days=1))
    kept: list[WasteFinding] = []
    merged: list[WasteFinding] = []
    for finding in findings:
        parts = _ledger_resources(session, finding, week, currency)
        hit = {
            rid
            for rid in (parts or {})
            if rid is not None and any(k in covered for k in ledger_keys(rid))
        }
        if not parts or not hit:
            kept.append(finding)
            continue
        total = sum(parts.values(), Decimal(0))
        share = sum((parts[r] for r in hit), Decimal(0)) / total if total else Decimal(1)
        left = (finding.monthly_cost * (1 - share)).quantize(Decimal("0.01"))
        if len(hit) == len(parts) or left < min_monthly:
            merged.append(finding)
            continue
        listed = (
            "is listed as a resource finding"
            if len(hit) == 1
            else "are listed as resource findings"
        )
        note = f" ({len(hit)} of its {counted(len(parts), 'resource')} {listed})"
        kept.append(
            dataclasses.replace(finding, monthly_cost=left, evidence=finding.evidence + note)
        )
    kept.sort(key=lambda f: f.monthly_cost, reverse=True)
    return kept, merged


Entry = WasteFinding | ResourceEntry


@dataclass(frozen=True)
class WasteOverview:
    """Everything the waste surfaces show: ledger and resource findings, and what was saved.

    `findings` are the ledger's (less what resource findings already list), `resources` the open
    resource findings counted as waste, `silenced` the open ones marked Keep or Not waste,
    `closed` every closed resource finding with what it saved so far.
    """

    findings: list[WasteFinding]
    resources: list[ResourceEntry]
    silenced: list[ResourceEntry]
    closed: list[ResourceEntry]
    merged: list[WasteFinding]
    currency: str
    now: dt.datetime
    posting_floor: Decimal | None = None  # resource findings under it are recorded, not posted
    # how fresh the ledger was on as_of: a stale one means "nothing found" is no all-clear
    freshness: LedgerFreshness | None = None

    @property
    def stale_data(self) -> str | None:
        """Return the line saying the ledger is stale (or empty), else None."""
        return None if self.freshness is None else freshness_line(self.freshness)

    @property
    def ranked(self) -> list[Entry]:
        """Ledger and resource findings together, largest monthly cost first."""
        both: list[Entry] = [*self.resources, *self.findings]
        return sorted(both, key=lambda f: f.monthly_cost, reverse=True)

    @property
    def monthly_total(self) -> Decimal:
        return sum((f.monthly_cost for f in self.ranked), Decimal(0))

    @property
    def recently_closed(self) -> list[ResourceEntry]:
        """The findings closed in the last CLOSED_RECENT_DAYS days, latest first."""
        since = self.now - dt.timedelta(days=CLOSED_RECENT_DAYS)
        recent = [e for e in self.closed if e.closed_at is not None and e.closed_at >= since]
        return sorted(recent, key=lambda e: (e.closed_at, e.resource_id), reverse=True)

    @property
    def saved_total(self) -> Decimal:
        """What every closed finding saved so far."""
        return sum((e.saved_so_far or Decimal(0) for e in self.closed), Decimal("0.00"))


def waste_overview(
    *,
    session: Reader,
    settings: WasteSettings,
    as_of: dt.date,
    now: dt.datetime,
    cloudwatch: Any | None = None,
    strict: bool = True,
    ledger: list[WasteFinding] | None = None,
) -> WasteOverview:
    """Return the ledger's findings as of a day with the resource findings, ranked together.

    `ledger`: the ledger's findings as of that day when they were found already (the poll
    finds them beside its budgets, bot.poll.plan); else they are found here.
    """
    if ledger is None:
        ledger = find_configured_waste(
            session=session, settings=settings, as_of=as_of, cloudwatch=cloudwatch, strict=strict
        )
    currency = settings.currency
    floor = settings.scan_min_monthly
    open_ = [
        dataclasses.replace(e, below_floor=not e.posted and e.monthly_cost < floor)
        for e in resource_entries(session=session, now=now, currency=currency)
    ]
    findings, merged = merge_ledger_findings(
        session=session, findings=ledger, resources=open_, as_of=as_of, currency=currency
    )
    return WasteOverview(
        findings=findings,
        resources=[e for e in open_ if not e.silenced],
        silenced=[e for e in open_ if e.silenced],
        closed=resource_entries(session=session, now=now, currency=currency, status=CLOSED),
        merged=merged,
        currency=currency,
        now=now,
        posting_floor=floor,
        freshness=ledger_freshness(
            session=session, today=as_of, max_age_days=settings.gate_max_data_age_days
        ),
    )


def overview_for(session: Reader, overview: WasteOverview, name: str) -> WasteOverview:
    """Keep one team's or one model's findings; unowned ones only show in the whole view."""
    keep, team = _scope(session, name)

    def ours(entry: ResourceEntry) -> bool:
        return entry.model in keep or (
            team is not None and entry.model is None and (entry.team or "").lower() == team
        )

    return dataclasses.replace(
        overview,
        findings=[f for f in overview.findings if f.model in keep],
        resources=[e for e in overview.resources if ours(e)],
        silenced=[e for e in overview.silenced if ours(e)],
        closed=[e for e in overview.closed if ours(e)],
        merged=[f for f in overview.merged if f.model in keep],
    )
