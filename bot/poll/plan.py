"""Plan the alerts due as of a day: budgets, anomalies, unallocated spend and waste.

Each planner returns outbox posts carrying its domain's messages (rendered only when delivered,
by the renderer the composition root hands delivery), and the keys it could not route; nothing
is written here.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from decimal import Decimal

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from bot import collector
from bot.anomalies.detect import scan_anomalies
from bot.anomalies.messages import AnomalyAlertMessage
from bot.budgets.drivers import Drivers, top_drivers
from bot.budgets.evaluate import evaluate
from bot.budgets.messages import AlertContext, BudgetAlertMessage
from bot.budgets.plan import BudgetAlert, Silence, plan_budget_alerts, sent_by_scope
from bot.config import AlertSettings
from bot.db.engine import read_beside
from bot.db.schema import AlertSilence, DailySpend, OutboxMessage
from bot.ingest.ledger import IngestReport
from bot.notify.delivery import DeliveryReport
from bot.notify.outbox import PlannedPost, planned_post
from bot.notify.routing import Router
from bot.periods import days_words
from bot.spend.coverage import covered_days, ledger_first_day
from bot.spend.messages import UnallocatedAlertMessage
from bot.spend.reports import check_currency_setting, cost_column, taggable
from bot.waste.checks import WasteFinding
from bot.waste.findings import ResourceEntry, find_configured_waste, waste_overview
from bot.waste.messages import WasteDigestMessage

log = logging.getLogger(__name__)


ALL_CHECKS = ("budgets", "anomalies", "unallocated", "waste")


@dataclass
class CycleReport:
    """What one cycle read, planned, queued and delivered."""

    as_of: dt.date
    budgets_evaluated: int = 0
    planned: list[PlannedPost] = field(default_factory=list)
    queued: int = 0
    unroutable: list[str] = field(default_factory=list)
    fetched: list[IngestReport] = field(default_factory=list)
    fetch_errors: list[str] = field(default_factory=list)
    delivery: DeliveryReport | None = None
    # scopes not judged for anomalies for lack of covered history -> their days of history
    short_history: dict[str, int] = field(default_factory=dict)
    min_history_days: int = 0


def load_silences(
    session: Session,
    periods: Mapping[str, str],
    now: dt.datetime,
    revisions: Mapping[str, int] | None = None,
) -> dict[str, Silence]:
    """Return the silences in force, by budget scope, each for its budget's current period.

    `periods` maps each scope to its current period's label (`2026-11`, `w2026-11-23`). A
    silence given for an earlier amount of the budget (`revisions`: each scope's current
    amount revision, 0 when absent) is not in force: the changed amount's alerts are news.
    """
    silences: dict[str, Silence] = {}
    rows = session.scalars(
        select(AlertSilence)
        .where(AlertSilence.period.in_(sorted(set(periods.values()))))
        .order_by(AlertSilence.at)
    )
    for row in rows:
        if periods.get(row.budget_scope) != row.period:
            continue
        if row.budget_revision != (revisions or {}).get(row.budget_scope, 0):
            continue
        current = silences.get(row.budget_scope, Silence())
        if row.kind == "ack":
            current = Silence(row.user_id, current.snoozed_until, current.snoozed_by)
        elif row.kind == "snooze" and row.until is not None and row.until > now:
            current = Silence(current.acknowledged_by, row.until, row.user_id)
        silences[row.budget_scope] = current
    return silences


def recorded_keys(session: Session, *likes: str) -> set[str]:
    """Return the outbox keys matching any of the LIKE patterns."""
    return set(
        session.scalars(
            select(OutboxMessage.dedupe_key).where(
                or_(*(OutboxMessage.dedupe_key.like(like) for like in likes))
            )
        )
    )


def plan_budget_posts(
    *,
    session: Session,
    settings: AlertSettings,
    as_of: dt.date,
    now: dt.datetime,
    router: Router,
    also_sent: Iterable[str] = (),
) -> tuple[list[PlannedPost], list[str], int]:
    """Evaluate every budget and return (posts due, unroutable keys, budgets evaluated)."""
    basis = settings.budget_cost_basis
    evaluation = evaluate(session=session, as_of=as_of, basis=basis)
    statuses = evaluation.statuses
    if not statuses:
        return [], [], 0
    periods = {s.scope: s.month.label for s in statuses}  # each budget's current period
    revisions = {s.scope: s.revision for s in statuses}
    likes = [f"budget:%:{label}:%" for label in sorted(set(periods.values()))]
    recorded = recorded_keys(session, *likes)
    sent = sent_by_scope([*recorded, *also_sent], revisions, periods)
    silences = load_silences(session, periods, now, revisions)
    due: list[BudgetAlert] = []
    for status in statuses:
        due.extend(
            plan_budget_alerts(
                status,
                sent=sent.get(status.scope, set()),
                silence=silences.get(status.scope),
                now=now,
            )
        )
    if not due:
        return [], [], len(statuses)
    alerting = {a.status.budget_id: a.status for a in due}
    drivers = top_drivers(
        session=session, statuses=alerting.values(), basis=basis, evaluation=evaluation
    )
    router.preload(
        [s.model_name for s in alerting.values() if s.model_name],
        [s.team_name for s in alerting.values() if s.team_name],
    )
    posts, unroutable = [], []
    for alert in due:
        status = alert.status
        channel, owners = router.route(status.model_name, status.team_name)
        if channel is None:
            unroutable.append(alert.dedupe_key)
            continue
        ctx = AlertContext(
            channel=channel,
            owners=owners,
            drivers=drivers.get(status.budget_id, Drivers()),
            currency=status.currency,  # the budget's: it counts only spend billed in it
            basis=basis,
        )
        message = BudgetAlertMessage(alert, ctx)
        posts.append(planned_post(alert.dedupe_key, f"budget_{alert.kind}", channel, message))
    return posts, unroutable, len(statuses)


def plan_anomaly_posts(
    *, session: Session, settings: AlertSettings, as_of: dt.date, router: Router
) -> tuple[list[PlannedPost], list[str], dict[str, int]]:
    """Find the anomalies of the trailing re-check window; return (posts, unroutable keys,
    the scopes not judged for lack of history with their covered days of history).

    Every run re-checks the last MLCOST_ANOMALY_RECHECK_DAYS days, not only as_of: spend that
    arrives late or is restated is judged again. Keys (per kind, scope and day) stop repeats.
    """
    scan = scan_anomalies(
        session=session,
        first=as_of - dt.timedelta(days=settings.anomaly_recheck_days - 1),
        last=as_of,
        min_excess=settings.anomaly_min_dollars,
        basis=settings.budget_cost_basis,
        currency=settings.currency,
        min_history=settings.anomaly_min_history_days,
    )
    if scan.short_history:
        log.info(
            "anomalies: %d scopes not judged, with less than %d days of history",
            len(scan.short_history),
            settings.anomaly_min_history_days,
        )
    posts, unroutable = [], []
    for anomaly in scan.anomalies:
        channel, owners = router.route(anomaly.model_name, None)
        if channel is None:
            unroutable.append(anomaly.dedupe_key)
            continue
        ctx = AlertContext(
            channel=channel,
            owners=owners,
            currency=settings.currency,
            basis=settings.budget_cost_basis,
        )
        message = AnomalyAlertMessage(anomaly, ctx)
        posts.append(planned_post(anomaly.dedupe_key, f"anomaly_{anomaly.kind}", channel, message))
    return posts, unroutable, scan.short_history


def last_complete_week(as_of: dt.date) -> tuple[dt.date, dt.date]:
    """Return (Monday, Sunday) of the latest ISO week that ended on or before as_of."""
    sunday = as_of - dt.timedelta(days=(as_of.weekday() + 1) % 7)
    return sunday - dt.timedelta(days=6), sunday


def covered_week(
    session: Session, as_of: dt.date, currency: str = "USD"
) -> tuple[dt.date, dt.date] | None:
    """Return the last complete week (Monday, Sunday) if each of its days is covered (some
    source's usage in `currency` is in the ledger): a day in a gap is unknown, not $0."""
    monday, sunday = last_complete_week(as_of)
    covered = covered_days(session, start=monday, end=sunday, currency=currency)
    return (monday, sunday) if len(covered) == 7 else None


def week_label(monday: dt.date, sunday: dt.date) -> str:
    """Return `the week of Nov 23–29` (`Oct 26–Nov 1` across months)."""
    return f"the week of {days_words(monday, sunday)}"


def plan_unallocated_post(
    *, session: Session, settings: AlertSettings, as_of: dt.date, router: Router
) -> tuple[list[PlannedPost], list[str]]:
    """Return the weekly unallocated alerts for the last complete week that are worth posting.

    One per billing currency (amounts in different currencies are never added): the
    organisation's currency keeps the key `unallocated:<monday>`, others add `:<code>`.
    """
    week = covered_week(session, as_of, settings.currency)
    if week is None:
        return [], []  # the ledger does not cover the whole week
    monday, sunday = week
    cost = cost_column(settings.budget_cost_basis)
    total_cost = func.sum(cost)
    rows = session.execute(
        select(DailySpend.currency, DailySpend.service, DailySpend.model_tag_value, total_cost)
        .where(
            DailySpend.model.is_(None),
            taggable(),  # idle cluster capacity, tax, support fees: no tag would fix them
            DailySpend.day >= monday,
            DailySpend.day <= sunday,
        )
        .group_by(DailySpend.currency, DailySpend.service, DailySpend.model_tag_value)
        .order_by(DailySpend.currency, total_cost.desc())
    ).all()
    by_currency: dict[str, list[tuple[str, str | None, Decimal]]] = {}
    for code, service, tag, amount in rows:
        by_currency.setdefault(code, []).append((str(service), tag, Decimal(amount or 0)))
    posts: list[PlannedPost] = []
    unroutable: list[str] = []
    for code, lines in by_currency.items():
        key = f"unallocated:{monday.isoformat()}"
        key += "" if code == settings.currency else f":{code}"
        total = sum((amount for _, _, amount in lines), Decimal(0))
        if total < settings.unallocated_min_dollars:
            continue
        if router.finops_channel is None:
            unroutable.append(key)
            continue
        label = week_label(monday, sunday)
        message = UnallocatedAlertMessage(lines, total, label, code)
        posts.append(planned_post(key, "unallocated", router.finops_channel, message))
    return posts, unroutable


def waste_week_due(session: Session, as_of: dt.date) -> tuple[dt.date, dt.date] | None:
    """Return the last complete week (Monday, Sunday) when its waste digests are due: none of
    them is in the outbox yet, and the ledger reaches back to its Monday."""
    monday, sunday = last_complete_week(as_of)
    if recorded_keys(session, f"waste:{monday.isoformat()}:%"):
        # the week's digest is out: the checks read the week's ledger nine times (seconds at
        # scale), so the polls after it skip them until the next week. A channel whose first
        # finding shows up after the digest hears of it in next week's.
        return None
    first_day = ledger_first_day(session)
    if first_day is None or first_day > monday:
        return None  # the ledger begins after this week: there is nothing to say about it
    return monday, sunday


def plan_waste_posts(
    *, session: Session, settings: AlertSettings, as_of: dt.date, router: Router
) -> tuple[list[PlannedPost], list[str]]:
    """Return the weekly waste digests for the last complete week: one per channel, planned
    once a week (none once any of the week's digests is in the outbox).

    A ledger finding goes where its model's alerts go; one with no model (spend tagged for an
    unregistered model) goes to the FinOps channel. An open resource finding not marked Keep or
    Not waste is listed (one line) in the channel its own post went to: its model's, else its
    team's, else FinOps; a channel's closed resource findings add what they saved so far.
    """
    week = waste_week_due(session, as_of)
    if week is None:
        return [], []
    return _waste_posts(
        session=session, settings=settings, as_of=as_of, router=router, week=week, ledger=None
    )


def _waste_posts(
    *,
    session: Session,
    settings: AlertSettings,
    as_of: dt.date,
    router: Router,
    week: tuple[dt.date, dt.date],
    ledger: Future[list[WasteFinding]] | None,
) -> tuple[list[PlannedPost], list[str]]:
    """Return the digests of a week that is due (plan_waste_posts); `ledger`: its ledger
    findings, being found beside the session (plan_alerts), else they are found here."""
    monday, sunday = week
    # A week the ledger reaches only in part is still posted: resource findings stand apart from
    # the bill, and the digest says the data is stale rather than giving an all-clear.
    # resource findings as they stand at the end of as_of (Keep in force, saved so far)
    now = dt.datetime.combine(as_of + dt.timedelta(days=1), dt.time(), dt.UTC)
    overview = waste_overview(
        session=session,
        settings=settings,
        as_of=sunday,
        now=now,
        strict=False,
        ledger=None if ledger is None else ledger.result(),
    )
    findings = overview.findings
    by_channel: dict[str, list[WasteFinding]] = {}
    resources: dict[str, list[ResourceEntry]] = {}
    saved: dict[str, list[ResourceEntry]] = {}
    owners: dict[str, set[str]] = {}
    unroutable: list[str] = []
    entries = [*overview.resources, *overview.closed]
    router.preload(
        [m for m in [*(f.model for f in findings), *(e.model for e in entries)] if m],
        [e.team for e in entries if e.team and not e.model],
    )
    for finding in findings:
        channel, finding_owners = (
            router.route(finding.model, None) if finding.model else (router.finops_channel, [])
        )
        if channel is None:
            unroutable.append(f"waste:{monday.isoformat()}:{finding.kind}:{finding.subject}")
            continue
        by_channel.setdefault(channel, []).append(finding)
        owners.setdefault(channel, set()).update(finding_owners)
    for entry in overview.resources:
        channel, entry_owners = router.route(entry.model, entry.team)
        if channel is None:
            unroutable.append(f"waste:{monday.isoformat()}:resource:{entry.finding_id}")
            continue
        resources.setdefault(channel, []).append(entry)
        owners.setdefault(channel, set()).update(entry_owners)
    for entry in overview.closed:
        channel, _ = router.route(entry.model, entry.team)
        if channel is not None:
            saved.setdefault(channel, []).append(entry)
    label = week_label(monday, sunday)
    posts = []
    for channel in sorted({*by_channel, *resources}):
        closed = saved.get(channel, [])
        message = WasteDigestMessage(
            by_channel.get(channel, []),
            label,
            sorted(owners[channel]),
            settings.currency,
            resources=resources.get(channel, []),
            saved_total=sum((e.saved_so_far or Decimal(0) for e in closed), Decimal("0.00")),
            closed_count=len(closed),
            stale=overview.stale_data,
        )
        posts.append(
            planned_post(f"waste:{monday.isoformat()}:{channel}", "waste", channel, message)
        )
    return posts, unroutable


def plan_alerts(
    *,
    session: Session,
    settings: AlertSettings,
    as_of: dt.date,
    now: dt.datetime,
    checks: Sequence[str] = ALL_CHECKS,
    also_sent: Iterable[str] = (),
) -> CycleReport:
    """Plan every alert due as of a day (nothing is written).

    When the week's waste digests are due, their ledger checks (a second connection reading
    what the session reads, on PostgreSQL: bot.db.engine.read_beside) run while the
    session plans the budgets' alerts.
    """
    check_currency_setting(session, settings.currency)  # never relabel the ledger's money
    week = waste_week_due(session, as_of) if "waste" in checks else None
    beside: AbstractContextManager[Future[list[WasteFinding]] | None] = nullcontext()
    if week is not None:
        sunday = week[1]
        beside = read_beside(
            session,
            lambda side: find_configured_waste(
                session=side, settings=settings, as_of=sunday, strict=False
            ),
        )
    with collector.paused(), beside as found:  # millions of short-lived objects at scale
        return _plan(session, settings, as_of, now, checks, also_sent, week, found)


def _plan(
    session: Session,
    settings: AlertSettings,
    as_of: dt.date,
    now: dt.datetime,
    checks: Sequence[str],
    also_sent: Iterable[str],
    waste_week: tuple[dt.date, dt.date] | None,
    ledger_waste: Future[list[WasteFinding]] | None,
) -> CycleReport:
    report = CycleReport(as_of=as_of)
    router = Router(session)
    if "budgets" in checks:
        posts, unroutable, evaluated = plan_budget_posts(
            session=session,
            settings=settings,
            as_of=as_of,
            now=now,
            router=router,
            also_sent=also_sent,
        )
        report.planned.extend(posts)
        report.unroutable.extend(unroutable)
        report.budgets_evaluated = evaluated
    extra: list[PlannedPost] = []
    if "anomalies" in checks:
        posts, unroutable, report.short_history = plan_anomaly_posts(
            session=session, settings=settings, as_of=as_of, router=router
        )
        report.min_history_days = settings.anomaly_min_history_days
        extra.extend(posts)
        report.unroutable.extend(unroutable)
    if "unallocated" in checks:
        posts, unroutable = plan_unallocated_post(
            session=session, settings=settings, as_of=as_of, router=router
        )
        extra.extend(posts)
        report.unroutable.extend(unroutable)
    if waste_week is not None:  # the waste check asked for, and the week's digests due
        posts, unroutable = _waste_posts(
            session=session,
            settings=settings,
            as_of=as_of,
            router=router,
            week=waste_week,
            ledger=ledger_waste,
        )
        extra.extend(posts)
        report.unroutable.extend(unroutable)
    report.planned.extend(_not_recorded(session, extra, also_sent))
    for key in report.unroutable:
        log.warning(
            "alert %s has no channel: set the model's or team's channel, or "
            "finops_channel in the registry",
            key,
        )
    return report


def _not_recorded(
    session: Session, posts: list[PlannedPost], also_sent: Iterable[str]
) -> list[PlannedPost]:
    """Return the posts whose keys are neither in the outbox nor in also_sent."""
    if not posts:
        return []
    known = set(also_sent) | set(
        session.scalars(
            select(OutboxMessage.dedupe_key).where(
                OutboxMessage.dedupe_key.in_([p.dedupe_key for p in posts])
            )
        )
    )
    return [p for p in posts if p.dedupe_key not in known]
