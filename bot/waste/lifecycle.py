"""Resource findings across scans: post once, again only when worse, remember decisions, close.

Rules (every amount is a monthly cost from the scan):
- a new finding is posted once, to its model's channel (else its team's, else FinOps);
- a finding under the posting floor (PostingPolicy.min_monthly, MLCOST_SCAN_MIN_MONTHLY) is
  recorded (reports list it) but not posted; it is posted as new once its cost reaches the floor;
- at most PostingPolicy.max_posts_per_channel findings are posted one by one per channel per UTC
  day (new, worse and re-raised alike, the largest first); the rest of that channel's due
  findings go into one summary post per account, channel and day, and stay due: later scans post
  them one by one as the cap leaves room (so every finding gets its buttons);
- an open finding is posted again only when its cost exceeds the last posted cost by more than
  half (REPOST_GROWTH);
- "Keep for 7 days" silences it until `keep_until`, then it is posted again if still found;
  "Not waste" silences it for good. Both are lifted, and the finding posted again, when the cost
  exceeds the cost at the decision by more than half;
- a finding whose region and kind were scanned completely (no scanner failure there) and which
  the scan no longer found is closed, with a reply in its thread saying what it saved so far.

"Saved so far" is the monthly cost the last scan that saw it measured, times the days since that
scan, over 30 days: `monthly_cost × (as_of − last_seen) / 30 days`, in cents. It is written when
the finding closes and grows afterwards (`saved_so_far(row, as_of)`).

Services here take the session as a keyword and never commit.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload

from bot.db.engine import database_now
from bot.db.locks import claim_row
from bot.db.schema import AuditLog, MLModel, ResourceFindingRecord, Team
from bot.errors import MlcostError, NotFoundError, PermissionDenied
from bot.money import format_money_places
from bot.notify.outbox import PlannedPost, enqueue_many, planned_post
from bot.notify.routing import Router
from bot.periods import day_words
from bot.registry.catalog import can_manage_model, can_manage_team, is_admin, model_owner_ids
from bot.waste.catalog import scanner_named, scanners
from bot.waste.messages import (
    ResourceDecisionState,
    WasteResourceMessage,
    WasteResourceReplyMessage,
    WasteResourceSummaryLine,
    WasteResourceSummaryMessage,
)
from bot.waste.savings import CLOSED, OPEN, saved_so_far
from bot.waste.scan.model import ResourceFinding

if TYPE_CHECKING:
    from bot.waste.actions import ActionResult
    from bot.waste.scan.run import ScanReport

log = logging.getLogger(__name__)

REPOST_GROWTH = Decimal("1.5")  # posted again when the cost is more than 150 % of the last post
KEEP_DAYS = 7
POST_KIND = "waste-resource"
REPLY_KIND = "waste-resource-reply"
SUMMARY_KIND = "waste-resource-summary"
SUMMARY_LINES = 5  # findings named in a summary post
NONE, KEEP, NOT_WASTE, STOP = "none", "keep", "not_waste", "stop"
ACTING = "acting"
# a claim older than this is taken to have died with its process (the snapshot waiter gives up
# after 20 minutes), so a new Stop it may act
ACTING_LEASE = dt.timedelta(hours=1)

Scope = tuple[str, str]  # (region, kind)


@dataclass(frozen=True)
class PostingPolicy:
    """How much a scan may post: the monthly cost floor and the per-channel daily cap."""

    min_monthly: Decimal = Decimal(50)  # as the ledger's waste MIN_MONTHLY (bot/waste/findings.py)
    max_posts_per_channel: int = 10


DEFAULT_POLICY = PostingPolicy()


@dataclass
class LifecycleReport:
    """What one recorded scan changed: keys posted (new, worse, re-raised), closed, silenced."""

    new: list[str] = field(default_factory=list)
    worse: list[str] = field(default_factory=list)
    reraised: list[str] = field(default_factory=list)
    silenced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    unrouted: list[str] = field(default_factory=list)  # due, but no channel to post to
    below_floor: list[str] = field(default_factory=list)  # recorded, under the posting floor
    summarised: list[str] = field(default_factory=list)  # due, over the cap: in a summary post
    closed: list[tuple[str, Decimal]] = field(default_factory=list)
    posts: list[str] = field(default_factory=list)  # outbox keys queued

    @property
    def posted(self) -> list[str]:
        return self.new + self.worse + self.reraised


def record_key(row: ResourceFindingRecord) -> str:
    """Return the finding's key as text: account/region/kind/resource id."""
    return f"{row.account}/{row.region}/{row.kind}/{row.resource_id}"


def post_key(finding_id: int, post_number: int) -> str:
    """Return the outbox key of a finding's nth post (its thread's parent)."""
    return f"{POST_KIND}:{finding_id}:{post_number}"


def money(amount: Decimal, currency: str) -> str:
    """Render an amount with cents and its symbol, as every resource finding text does."""
    return format_money_places(amount, currency, 2)


def closed_findings(
    *, session: Session, as_of: dt.datetime, since: dt.datetime | None = None
) -> list[tuple[ResourceFindingRecord, Decimal]]:
    """Return closed findings (closed since `since`, if given) with what each saved by `as_of`."""
    query = select(ResourceFindingRecord).where(ResourceFindingRecord.status == CLOSED)
    if since is not None:
        query = query.where(ResourceFindingRecord.closed_at >= since)
    rows = session.scalars(query.order_by(ResourceFindingRecord.closed_at.desc()))
    return [(row, saved_so_far(row, as_of) or Decimal(0)) for row in rows]


def complete_scopes(report: ScanReport, s3_scanned: bool) -> set[Scope]:
    """Return the (region, kind) pairs the scan covered completely (no scanner failed there).

    Only the kinds of scanners that close missing findings count (bot/waste/catalog.py); a
    scanner that runs once, not per region (S3), counts when `s3_scanned`.
    """
    closing = [s for s in scanners() if s.closes_missing and (s.per_region or s3_scanned)]
    scopes = {
        (region, str(kind.kind)) for region in report.regions for s in closing for kind in s.kinds
    }
    for failure in report.failures:
        failed = scanner_named(failure.kind)
        if failed is None or not failed.closes_missing:  # nothing in its region closes
            scopes = {s for s in scopes if s[0] != failure.region}
            continue
        kinds = {str(kind.kind) for kind in failed.kinds}
        if not failed.per_region:  # S3 runs once, for every region's buckets
            scopes = {s for s in scopes if s[1] not in kinds}
        scopes -= {(failure.region, kind) for kind in kinds}
    return scopes


def record_report(
    *,
    session: Session,
    report: ScanReport,
    now: dt.datetime,
    s3_scanned: bool,
    policy: PostingPolicy = DEFAULT_POLICY,
) -> LifecycleReport:
    """Record a whole scan report (see record_scan)."""
    return record_scan(
        session,
        report.findings,
        now,
        account=report.account,
        complete=complete_scopes(report, s3_scanned),
        policy=policy,
    )


def record_scan(
    session: Session,
    findings: Sequence[ResourceFinding],
    now: dt.datetime,
    *,
    account: str,
    complete: Iterable[Scope] = (),
    policy: PostingPolicy = DEFAULT_POLICY,
) -> LifecycleReport:
    """Upsert the findings of one account's scan, queue the posts that are due, close the gone.

    `complete` names the (region, kind) pairs whose scanner finished: only there does a missing
    finding close (a failed scanner says nothing about what it would have found). `policy` says
    what is too small to post and how many posts a channel takes a day.
    """
    report = LifecycleReport()
    rows = {
        record_key(r): r
        for r in session.scalars(
            select(ResourceFindingRecord).where(ResourceFindingRecord.account == account)
        )
    }
    found: dict[str, ResourceFindingRecord] = {}
    for finding in findings:
        if finding.account != account:
            continue
        key = str(finding.key)
        row = rows.get(key)
        if row is None:
            row = rows[key] = _new_row(finding, now)
            session.add(row)
        else:
            _refresh(row, finding, now)
        found[key] = row
    session.flush()  # new rows get their ids: the posts' keys name them
    router = Router(session)
    router.preload({r.model for r in found.values() if r.model}, set())
    due: dict[str, list[tuple[str, ResourceFindingRecord, Due]]] = {}
    for key, row in found.items():
        if row.monthly_cost < policy.min_monthly:
            report.below_floor.append(key)
            continue
        why = _due(row, now)
        if why is None:
            silenced = row.decision in (KEEP, NOT_WASTE)
            (report.silenced if silenced else report.unchanged).append(key)
            continue
        channel = router.route(row.model, row.team)[0]
        if channel is None:
            row.channel = None
            log.warning("resource finding %s: no channel (set finops_channel)", key)
            report.unrouted.append(key)
            continue
        due.setdefault(channel, []).append((key, row, why))
    posts: list[PlannedPost] = []
    room = _room_today(session, set(due), now, policy.max_posts_per_channel)
    for channel, entries in sorted(due.items()):
        entries.sort(key=lambda e: (-e[1].monthly_cost, e[0]))
        for key, row, (kind, why_again, clears) in entries[: room[channel]]:
            if clears:  # Keep expired, or the cost outgrew a decision
                before = _snapshot(row)
                _clear_decision(row)
                _audit(session, row, "mlcost", "waste_resource_reraise", before, now, why=why_again)
            posts.append(_post(row, router, channel, why_again))
            {"new": report.new, "worse": report.worse, "reraised": report.reraised}[kind].append(
                key
            )
        over = [row for _, row, _ in entries[room[channel] :]]
        if over:
            report.summarised.extend(key for key, _, _ in entries[room[channel] :])
            posts.append(_summary(account, channel, over, now, policy.max_posts_per_channel))
    scopes = set(complete)
    for key, row in rows.items():
        if row.status != OPEN or key in found or (row.region, row.kind) not in scopes:
            continue
        reply = _close(row, now)
        report.closed.append((key, row.saved_so_far or Decimal(0)))
        if reply is not None:
            posts.append(reply)
    report.posts = sorted(enqueue_many(session, posts))
    return report


def _day(now: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime.combine(now.astimezone(dt.UTC).date(), dt.time(), tzinfo=dt.UTC)
    return start, start + dt.timedelta(days=1)


def _room_today(session: Session, channels: set[str], now: dt.datetime, cap: int) -> dict[str, int]:
    """Return how many more findings each channel may take one by one today (UTC day)."""
    if not channels:
        return {}
    start, end = _day(now)
    table = ResourceFindingRecord
    used = dict(
        session.execute(
            select(table.channel, func.count())
            .where(
                table.channel.in_(channels),
                table.last_posted_at >= start,
                table.last_posted_at < end,
            )
            .group_by(table.channel)
        ).all()
    )
    return {c: max(0, cap - int(used.get(c, 0))) for c in channels}


def _summary(
    account: str, channel: str, over: list[ResourceFindingRecord], now: dt.datetime, cap: int
) -> PlannedPost:
    """Plan the day's one summary post of a channel's findings over the cap (largest first)."""
    currency = over[0].currency
    message = WasteResourceSummaryMessage(
        count=len(over),
        total_monthly=sum((r.monthly_cost for r in over), Decimal(0)),
        top=[
            WasteResourceSummaryLine(r.kind, r.resource_id, r.monthly_cost, r.reason)
            for r in over[:SUMMARY_LINES]
        ],
        cap=cap,
        currency=currency,
    )
    day = now.astimezone(dt.UTC).strftime("%Y%m%d")
    return planned_post(f"{SUMMARY_KIND}:{account}:{channel}:{day}", SUMMARY_KIND, channel, message)


def _new_row(finding: ResourceFinding, now: dt.datetime) -> ResourceFindingRecord:
    row = ResourceFindingRecord(
        account=finding.account,
        region=finding.region,
        kind=str(finding.kind),
        resource_id=finding.resource_id,
        status=OPEN,
        first_seen=now,
        last_seen=now,
        monthly_cost=finding.monthly_cost,
        raised_monthly_cost=finding.monthly_cost,
        post_count=0,
        decision=NONE,
        action_count=0,
    )
    _describe(row, finding)
    return row


def _describe(row: ResourceFindingRecord, finding: ResourceFinding) -> None:
    """Copy what the scan says about the resource now onto the row."""
    row.currency = finding.currency
    row.model = finding.resource.model
    row.team = finding.resource.team
    row.reason = str(finding.reason)
    row.action = str(finding.recommendation.action)
    row.target = dict(finding.resource.target)
    row.details = finding.to_dict()


def _refresh(row: ResourceFindingRecord, finding: ResourceFinding, now: dt.datetime) -> None:
    """Update an existing row from this scan; a closed finding found again opens anew."""
    if row.status == CLOSED:
        row.status = OPEN
        row.first_seen = now
        row.raised_monthly_cost = finding.monthly_cost
        row.last_posted_monthly_cost = None  # a new episode: posted again (unless silenced)
        row.closed_at = None
        row.saved_so_far = None
        if (row.action_result or "").startswith("done") or row.action_result == ACTING:
            row.action_result = None  # the resource is back: Stop it may act again
        if row.decision == STOP:
            row.decision = NONE
    row.last_seen = now
    row.monthly_cost = finding.monthly_cost
    _describe(row, finding)


def _grew(cost: Decimal, base: Decimal | None) -> bool:
    return base is not None and cost > base * REPOST_GROWTH


Due = tuple[str, str | None, bool]  # ('new'|'worse'|'reraised', why again, clears the decision)


def _due(row: ResourceFindingRecord, now: dt.datetime) -> Due | None:
    """Say whether the finding is due for a post, why, and whether posting lifts its decision."""
    cur = row.currency
    cost = row.monthly_cost
    if row.decision in (KEEP, NOT_WASTE):
        base = row.decision_monthly_cost
        if _grew(cost, base):
            assert base is not None
            words = "Keep for 7 days" if row.decision == KEEP else "Not waste"
            why = (
                f"its monthly cost grew from {money(base, cur)} when it was marked "
                f"{words} to {money(cost, cur)}"
            )
            return "reraised", why, True
        if row.decision == NOT_WASTE or (row.keep_until and now < row.keep_until):
            return None
        until = day_words(row.keep_until.date(), year=True) if row.keep_until else "?"
        return "reraised", f"it was kept until {until} and is still found", True
    if row.last_posted_monthly_cost is None:
        return (
            ("new", None, False)
            if row.post_count == 0
            else ("reraised", "it was found again", False)
        )
    if _grew(cost, row.last_posted_monthly_cost):
        before = money(row.last_posted_monthly_cost, cur)
        return "worse", f"its monthly cost grew from {before} to {money(cost, cur)}", False
    return None


def _clear_decision(row: ResourceFindingRecord) -> None:
    row.decision = NONE
    row.decided_by = None
    row.decided_at = None
    row.keep_until = None
    row.decision_monthly_cost = None


def state_of(row: ResourceFindingRecord) -> ResourceDecisionState:
    """Return the decision as the post shows it."""
    return ResourceDecisionState(
        finding_id=row.id,
        decision=row.decision,
        decided_by=row.decided_by,
        decided_at=row.decided_at,
        keep_until=row.keep_until,
        decision_monthly_cost=row.decision_monthly_cost,
        action_result=row.action_result,
    )


def owners_of(session: Session, row: ResourceFindingRecord) -> list[str]:
    """Return who may decide on the finding (model owners and its team's), admins aside."""
    router = Router(session)
    return sorted(router.route(row.model, row.team)[1]) if row.model or row.team else []


def message_of(
    row: ResourceFindingRecord,
    owners: Iterable[str],
    previous: Decimal | None = None,
    why_again: str | None = None,
) -> WasteResourceMessage:
    """Return the finding's post as it should read now."""
    return WasteResourceMessage(
        details=row.details,
        owners=sorted(owners),
        state=state_of(row),
        currency=row.currency,
        post_number=max(row.post_count, 1),
        previous_monthly_cost=previous,
        why_again=why_again,
    )


def _post(
    row: ResourceFindingRecord, router: Router, channel: str, why_again: str | None
) -> PlannedPost:
    """Plan the finding's next post, to the channel it was routed to."""
    owners = router.route(row.model, row.team)[1]
    row.channel = channel
    previous = row.last_posted_monthly_cost
    row.post_count += 1
    row.last_posted_monthly_cost = row.monthly_cost
    row.last_posted_at = row.last_seen
    message = message_of(row, owners, previous, why_again)
    return planned_post(post_key(row.id, row.post_count), POST_KIND, channel, message)


def _close(row: ResourceFindingRecord, now: dt.datetime) -> PlannedPost | None:
    """Close a finding the scan no longer found; plan the thread reply that says so."""
    row.status = CLOSED
    row.closed_at = now
    saved = saved_so_far(row, now) or Decimal(0)
    row.saved_so_far = saved
    if row.post_count == 0 or row.channel is None:
        return None
    text = closed_text(row, saved)
    reply = WasteResourceReplyMessage(row.resource_id, "closed", text)
    key = f"{POST_KIND}:{row.id}:closed:{now.astimezone(dt.UTC):%Y%m%dT%H%M%S}"
    return planned_post(key, REPLY_KIND, row.channel, reply, post_key(row.id, row.post_count))


def closed_text(row: ResourceFindingRecord, saved: Decimal) -> str:
    """Say that the finding closed and what it saved so far (plain text)."""
    cur = row.currency
    days = (row.closed_at or row.last_seen) - row.last_seen
    return (
        f"Closed: {row.resource_id} is no longer found by the scan (last seen "
        f"{row.last_seen:%Y-%m-%d %H:%M} UTC). Saved so far: {money(saved, cur)} "
        f"({money(row.monthly_cost, cur)}/month over "
        f"{Decimal(str(days.total_seconds() / 86400)).quantize(Decimal('0.1'))} days since it "
        "was last seen; this grows as long as it stays gone)."
    )


# ---- decisions from Slack -------------------------------------------------------------------


def load_finding(session: Session, finding_id: int) -> ResourceFindingRecord:
    """Return the finding, or say it no longer exists."""
    row = session.get(ResourceFindingRecord, finding_id)
    if row is None:
        raise NotFoundError("That resource finding no longer exists.")
    return row


def check_can_decide(*, session: Session, finding_id: int, user_id: str) -> ResourceFindingRecord:
    """Return the finding if the user may decide on it: its model's or team's owners, or admins.

    An unowned finding (no registered model or team) is for admins only.
    """
    row = load_finding(session, finding_id)
    if row.model is not None:
        model = session.scalars(
            select(MLModel)
            .where(MLModel.name == row.model)
            .options(
                selectinload(MLModel.owners), selectinload(MLModel.team).selectinload(Team.owners)
            )
        ).first()
        if model is not None:
            if can_manage_model(session, user_id, model):
                return row
            owners = sorted(model_owner_ids(model) | {o.user_id for o in model.team.owners})
            raise PermissionDenied(_refusal(f"model {model.name}", owners, row))
    if row.team is not None:
        team = session.scalars(
            select(Team).where(Team.name == row.team).options(selectinload(Team.owners))
        ).first()
        if team is not None:
            if can_manage_team(session, user_id, team):
                return row
            owners = sorted(o.user_id for o in team.owners)
            raise PermissionDenied(_refusal(f"team {team.name}", owners, row))
    if is_admin(session, user_id):
        return row
    raise PermissionDenied(
        f"{row.resource_id} has no owner in the registry: only an admin can decide on it. "
        "Nothing was changed."
    )


def _refusal(scope: str, owners: list[str], row: ResourceFindingRecord) -> str:
    named = " ".join(f"<@{u}>" for u in owners) or "nobody is named"
    return (
        f"Only the owners of {scope} ({named}) or an admin can decide on {row.resource_id}. "
        "Nothing was changed."
    )


def _snapshot(row: ResourceFindingRecord) -> dict[str, Any]:
    """The decision fields, JSON-ready, for the audit log's before/after."""
    return {
        "decision": row.decision,
        "decided_by": row.decided_by,
        "decided_at": row.decided_at.isoformat() if row.decided_at else None,
        "keep_until": row.keep_until.isoformat() if row.keep_until else None,
        "decision_monthly_cost": (
            str(row.decision_monthly_cost) if row.decision_monthly_cost is not None else None
        ),
        "action_result": row.action_result,
        "action_count": row.action_count,
    }


def _audit(
    session: Session,
    row: ResourceFindingRecord,
    user_id: str,
    action: str,
    before: dict[str, Any],
    now: dt.datetime,
    **extra: Any,
) -> None:
    session.add(
        AuditLog(
            at=now,
            actor=user_id,
            action=action,
            target=record_key(row)[:250],
            detail={"finding": row.id, "before": before, "after": _snapshot(row), **extra},
        )
    )


def record_silence(
    *, session: Session, finding_id: int, user_id: str, decision: str, now: dt.datetime
) -> ResourceFindingRecord:
    """Record Keep for 7 days or Not waste (permission checked), audited with before/after.

    Decisions on one finding are serialised (its row is claimed, then read), so `before` is the
    decision replaced. A Stop it approved first (acting or done) wins: this one is refused,
    naming who approved it.
    """
    if decision not in (KEEP, NOT_WASTE):
        raise ValueError(f"not a silencing decision: {decision}")
    check_can_decide(session=session, finding_id=finding_id, user_id=user_id)
    row = claim_finding(session, finding_id)
    if row.decision == STOP and (
        row.action_result == ACTING or (row.action_result or "").startswith("done")
    ):
        words = "Keep for 7 days" if decision == KEEP else "Not waste"
        state = "is already being stopped" if row.action_result == ACTING else "was already stopped"
        raise DecisionConflict(
            f"{row.resource_id} {state}: <@{row.decided_by}> approved Stop it"
            f"{f' at {row.decided_at:%H:%M:%S} UTC' if row.decided_at else ''}. {words} was not "
            "recorded; nothing was changed."
        )
    before = _snapshot(row)
    row.decision = decision
    row.decided_by = user_id
    row.decided_at = now
    row.keep_until = now + dt.timedelta(days=KEEP_DAYS) if decision == KEEP else None
    row.decision_monthly_cost = row.monthly_cost
    _audit(session, row, user_id, f"waste_resource_{decision}", before, now)
    session.flush()
    return row


class DecisionConflict(MlcostError):
    """The finding was decided otherwise first (a Stop it running or done)."""


def claim_finding(session: Session, finding_id: int) -> ResourceFindingRecord:
    """Return the finding claimed for a decision (locked, its version bumped, read afresh)."""
    row = claim_row(session, ResourceFindingRecord, finding_id, what="this resource finding")
    if row is None:
        raise NotFoundError("That resource finding no longer exists.")
    return row


@dataclass(frozen=True)
class StopApproval:
    """A recorded Stop it: whether this press may act (it claimed the action) and on what."""

    finding_id: int
    acts: bool
    number: int
    kind: str
    action: str
    region: str
    target: dict[str, Any]
    previous_result: str | None = None
    user_id: str | None = None  # who approved it

    @classmethod
    def of(cls, row: ResourceFindingRecord, acts: bool, **extra: Any) -> StopApproval:
        """Return the approval of a finding's row as it stands (its action count numbers it)."""
        return cls(
            row.id,
            acts,
            row.action_count,
            row.kind,
            row.action,
            row.region,
            dict(row.target),
            **extra,
        )


def approve_stop(
    *, session: Session, finding_id: int, user_id: str, now: dt.datetime
) -> StopApproval:
    """Record a Stop it approval and claim the action, unless one is running or already done.

    The finding's row is claimed (locked, then read) first, so two presses (a retried request,
    two people) never both act: the later one sees the action running or done and changes
    nothing; a Keep or Not waste recorded before it is what the audit's `before` shows. A claim
    left by a process that died while acting expires after ACTING_LEASE, by the database's clock.
    """
    check_can_decide(session=session, finding_id=finding_id, user_id=user_id)
    row = claim_finding(session, finding_id)
    claimed_at = database_now(session)  # the claim's lease, compared by every process alike
    result = row.action_result
    running = (
        result == ACTING
        and row.action_at is not None
        and row.action_at >= claimed_at - ACTING_LEASE
    )
    if running or (result or "").startswith("done"):
        return StopApproval.of(row, False, previous_result=result, user_id=row.decided_by)
    before = _snapshot(row)
    row.action_result = ACTING
    row.action_count += 1
    row.action_at = claimed_at
    row.decision = STOP
    row.decided_by = user_id
    row.decided_at = now
    row.keep_until = None
    row.decision_monthly_cost = row.monthly_cost
    _audit(session, row, user_id, "waste_resource_stop", before, now)
    session.flush()
    return StopApproval.of(row, True, user_id=user_id)


def claim_stale_stops(*, session: Session, now: dt.datetime) -> list[StopApproval]:
    """Re-claim Stop it actions left `acting` longer than ACTING_LEASE (their process died).

    The lease is compared and renewed by the database's clock, not this host's.

    Each finding is claimed (locked, then read) before its claim is renewed, so of two
    processes retrying the same claim only one acts. The approval keeps its number: the thread
    reply's outbox key is the same, so a reply the dead process queued is not posted twice.
    """
    table = ResourceFindingRecord
    claimed_at = database_now(session)
    stale = session.scalars(
        select(table.id).where(
            table.action_result == ACTING, table.action_at < claimed_at - ACTING_LEASE
        )
    ).all()
    claimed: list[StopApproval] = []
    for finding_id in stale:
        row = claim_row(session, table, finding_id, what="this resource finding")
        if (
            row is None
            or row.action_result != ACTING
            or (row.action_at or claimed_at) >= claimed_at - ACTING_LEASE
        ):
            continue  # re-claimed (or finished) by another process meanwhile
        before = _snapshot(row)
        row.action_at = claimed_at
        _audit(session, row, "mlcost", "waste_resource_stop_retry", before, now)
        session.flush()
        claimed.append(StopApproval.of(row, True, user_id=row.decided_by))
    return claimed


def record_action_result(
    *,
    session: Session,
    approval: StopApproval,
    user_id: str,
    result: ActionResult,
    now: dt.datetime,
) -> ResourceFindingRecord:
    """Keep what Stop it did on the row and in the audit log; queue the thread reply."""
    row = claim_finding(session, approval.finding_id)
    before = _snapshot(row)
    row.action_result = result.summary
    _audit(
        session,
        row,
        user_id,
        "waste_resource_action",
        before,
        now,
        outcome=str(result.outcome),
        aws_calls=list(result.calls),
        error_code=result.error_code,
    )
    if row.post_count and row.channel:
        reply = WasteResourceReplyMessage(row.resource_id, "action", result.text, user_id)
        post = planned_post(
            f"{POST_KIND}:{row.id}:action:{approval.number}",
            REPLY_KIND,
            row.channel,
            reply,
            post_key(row.id, row.post_count),
        )
        enqueue_many(session, [post])
    return row
