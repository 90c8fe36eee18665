"""One poll-and-alert cycle: re-read spend, evaluate budgets, find anomalies, post each once.

The cycle records every alert in the outbox (keyed per budget, month and threshold, or per
anomaly and day) before anything is posted; delivery then sends what is pending. A dry run plans
the same alerts without writing anything.
"""

from __future__ import annotations

import datetime as dt
import logging
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload, sessionmaker

from bot.anomalies.detect import Anomaly, find_anomalies_between
from bot.bootstrap import AwsClientFactory, aws_client
from bot.budgets.evaluate import Drivers, evaluate_budgets, ledger_first_day, top_drivers
from bot.budgets.plan import BudgetAlert, Silence, plan_budget_alerts, sent_by_scope
from bot.config import Settings
from bot.db.engine import session_scope
from bot.db.schema import AlertSilence, DailySpend, MLModel, OutboxMessage, RegistrySetting, Team
from bot.errors import MlcostError
from bot.ingest.ledger import IngestReport, ingest
from bot.ingest.sources.base import Progress, SourceData, SpendSource
from bot.ingest.sources.exports import EXPORT_KINDS, RecentExportSource, recent_periods
from bot.ingest.sources.files import is_s3
from bot.notify.outbox import (
    DeliveryReport,
    FindPosted,
    PlannedPost,
    deliver_pending,
    enqueue_many,
)
from bot.notify.source_health import clear_source_failure, record_source_failure, redact
from bot.periods import local_today
from bot.registry.catalog import model_owner_ids
from bot.slack.blocks.alerts import (
    AlertContext,
    build_anomaly_alert,
    build_budget_alert,
    build_unallocated_alert,
)
from bot.slack.blocks.waste import build_waste_digest
from bot.slack.notifier import Notifier
from bot.spend.reports import check_currency_setting, cost_column
from bot.waste.findings import WasteFinding, find_configured_waste

log = logging.getLogger(__name__)

ALL_CHECKS = ("budgets", "anomalies", "unallocated", "waste")
# what the scheduler's poll evaluates after re-reading its sources; anomalies run once a day
POLL_CHECKS = ("budgets", "unallocated", "waste")


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


def default_as_of(now: dt.datetime, timezone: str) -> dt.date:
    """Return yesterday in the organisation's time zone: the last complete day of billing."""
    return local_today(now, timezone) - dt.timedelta(days=1)


class Router:
    """Find the channel and owners for a scope, loading only the models and teams needed."""

    def __init__(self, session: Session) -> None:
        self.session = session
        finops = session.get(RegistrySetting, "finops_channel")
        self.finops_channel: str | None = finops.value if finops is not None else None
        self._models: dict[str, MLModel | None] = {}
        self._teams: dict[str, Team | None] = {}

    def preload(self, models: Iterable[str], teams: Iterable[str]) -> None:
        """Load the named models and teams with their owners in two queries."""
        wanted_models = {m for m in models if m not in self._models}
        if wanted_models:
            for model in self.session.scalars(
                select(MLModel)
                .where(MLModel.name.in_(wanted_models))
                .options(
                    selectinload(MLModel.owners),
                    selectinload(MLModel.team).selectinload(Team.owners),
                )
            ):
                self._models[model.name] = model
            for name in wanted_models:
                self._models.setdefault(name, None)
        wanted_teams = {t for t in teams if t not in self._teams}
        if wanted_teams:
            for team in self.session.scalars(
                select(Team).where(Team.name.in_(wanted_teams)).options(selectinload(Team.owners))
            ):
                self._teams[team.name] = team
            for name in wanted_teams:
                self._teams.setdefault(name, None)

    def route(
        self, model_name: str | None, team_name: str | None
    ) -> tuple[str | None, frozenset[str]]:
        """Return (channel, owners): the model's channel, else its team's, else FinOps."""
        if model_name is not None:
            self.preload([model_name], [])
            model = self._models.get(model_name)
            if model is not None:
                channel = model.effective_channel or self.finops_channel
                return channel, frozenset(model_owner_ids(model))
        elif team_name is not None:
            self.preload([], [team_name])
            team = self._teams.get(team_name)
            if team is not None:
                owners = frozenset(o.user_id for o in team.owners)
                return team.channel or self.finops_channel, owners
        return self.finops_channel, frozenset()


def load_silences(
    session: Session,
    period: str,
    now: dt.datetime,
    revisions: Mapping[str, int] | None = None,
) -> dict[str, Silence]:
    """Return the silences in force this month, by budget scope.

    A silence given for an earlier amount of the budget (`revisions`: each scope's current
    amount revision, 0 when absent) is not in force: the changed amount's alerts are news.
    """
    silences: dict[str, Silence] = {}
    rows = session.scalars(
        select(AlertSilence).where(AlertSilence.period == period).order_by(AlertSilence.at)
    )
    for row in rows:
        if row.budget_revision != (revisions or {}).get(row.budget_scope, 0):
            continue
        current = silences.get(row.budget_scope, Silence())
        if row.kind == "ack":
            current = Silence(row.user_id, current.snoozed_until, current.snoozed_by)
        elif row.kind == "snooze" and row.until is not None and row.until > now:
            current = Silence(current.acknowledged_by, row.until, row.user_id)
        silences[row.budget_scope] = current
    return silences


def recorded_keys(session: Session, like: str) -> set[str]:
    """Return the outbox keys matching a LIKE pattern."""
    return set(
        session.scalars(select(OutboxMessage.dedupe_key).where(OutboxMessage.dedupe_key.like(like)))
    )


def plan_budget_posts(
    *,
    session: Session,
    settings: Settings,
    as_of: dt.date,
    now: dt.datetime,
    router: Router,
    also_sent: Iterable[str] = (),
) -> tuple[list[PlannedPost], list[str], int]:
    """Evaluate every budget and return (posts due, unroutable keys, budgets evaluated)."""
    basis = settings.budget_cost_basis
    statuses = evaluate_budgets(session=session, as_of=as_of, basis=basis)
    if not statuses:
        return [], [], 0
    period = statuses[0].month.label
    revisions = {s.scope: s.revision for s in statuses}
    sent = sent_by_scope([*recorded_keys(session, f"budget:%:{period}:%"), *also_sent], revisions)
    silences = load_silences(session, period, now, revisions)
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
    drivers = top_drivers(session=session, statuses=alerting.values(), basis=basis)
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
        text, blocks = build_budget_alert(alert, ctx)
        posts.append(PlannedPost(alert.dedupe_key, f"budget_{alert.kind}", channel, text, blocks))
    return posts, unroutable, len(statuses)


def plan_anomaly_posts(
    *, session: Session, settings: Settings, as_of: dt.date, router: Router
) -> tuple[list[PlannedPost], list[str]]:
    """Find the anomalies of the trailing re-check window and return (posts, unroutable keys).

    Every run re-checks the last MLCOST_ANOMALY_RECHECK_DAYS days, not only as_of: spend that
    arrives late or is restated is judged again. Keys (per kind, scope and day) stop repeats.
    """
    anomalies: Sequence[Anomaly] = find_anomalies_between(
        session=session,
        first=as_of - dt.timedelta(days=settings.anomaly_recheck_days - 1),
        last=as_of,
        min_excess=settings.anomaly_min_dollars,
        basis=settings.budget_cost_basis,
        currency=settings.currency,
    )
    posts, unroutable = [], []
    for anomaly in anomalies:
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
        text, blocks = build_anomaly_alert(anomaly, ctx)
        posts.append(
            PlannedPost(anomaly.dedupe_key, f"anomaly_{anomaly.kind}", channel, text, blocks)
        )
    return posts, unroutable


def last_complete_week(as_of: dt.date) -> tuple[dt.date, dt.date]:
    """Return (Monday, Sunday) of the latest ISO week that ended on or before as_of."""
    sunday = as_of - dt.timedelta(days=(as_of.weekday() + 1) % 7)
    return sunday - dt.timedelta(days=6), sunday


def covered_week(session: Session, as_of: dt.date) -> tuple[dt.date, dt.date] | None:
    """Return the last complete week (Monday, Sunday) if the ledger covers all of it."""
    monday, sunday = last_complete_week(as_of)
    first_day = ledger_first_day(session)
    return None if first_day is None or first_day > monday else (monday, sunday)


def week_label(monday: dt.date, sunday: dt.date) -> str:
    """Return `the week of Nov 23–Nov 29`."""
    return f"the week of {monday:%b %-d}–{sunday:%b %-d}"


def plan_unallocated_post(
    *, session: Session, settings: Settings, as_of: dt.date, router: Router
) -> tuple[list[PlannedPost], list[str]]:
    """Return the weekly unallocated alerts for the last complete week that are worth posting.

    One per billing currency (amounts in different currencies are never added): the
    organisation's currency keeps the key `unallocated:<monday>`, others add `:<code>`.
    """
    week = covered_week(session, as_of)
    if week is None:
        return [], []  # the ledger does not cover the whole week
    monday, sunday = week
    cost = cost_column(settings.budget_cost_basis)
    total_cost = func.sum(cost)
    rows = session.execute(
        select(DailySpend.currency, DailySpend.service, DailySpend.model_tag_value, total_cost)
        .where(DailySpend.model.is_(None), DailySpend.day >= monday, DailySpend.day <= sunday)
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
        text, blocks = build_unallocated_alert(lines, total, label, code)
        posts.append(PlannedPost(key, "unallocated", router.finops_channel, text, blocks))
    return posts, unroutable


def plan_waste_posts(
    *, session: Session, settings: Settings, as_of: dt.date, router: Router
) -> tuple[list[PlannedPost], list[str]]:
    """Return the weekly waste digests for the last complete week: one per channel.

    A finding goes where its model's alerts go; one with no model (spend tagged for an
    unregistered model) goes to the FinOps channel.
    """
    week = covered_week(session, as_of)
    if week is None:
        return [], []  # the ledger does not cover the whole week
    monday, sunday = week
    findings = find_configured_waste(session=session, settings=settings, as_of=sunday, strict=False)
    by_channel: dict[str, list[WasteFinding]] = {}
    owners: dict[str, set[str]] = {}
    unroutable: list[str] = []
    router.preload([f.model for f in findings if f.model], [])
    for finding in findings:
        channel, finding_owners = (
            router.route(finding.model, None) if finding.model else (router.finops_channel, [])
        )
        if channel is None:
            unroutable.append(f"waste:{monday.isoformat()}:{finding.kind}:{finding.subject}")
            continue
        by_channel.setdefault(channel, []).append(finding)
        owners.setdefault(channel, set()).update(finding_owners)
    label = week_label(monday, sunday)
    posts = []
    for channel, found in sorted(by_channel.items()):
        text, blocks = build_waste_digest(found, label, sorted(owners[channel]), settings.currency)
        posts.append(
            PlannedPost(f"waste:{monday.isoformat()}:{channel}", "waste", channel, text, blocks)
        )
    return posts, unroutable


def plan_alerts(
    *,
    session: Session,
    settings: Settings,
    as_of: dt.date,
    now: dt.datetime,
    checks: Sequence[str] = ALL_CHECKS,
    also_sent: Iterable[str] = (),
) -> CycleReport:
    """Plan every alert due as of a day (nothing is written)."""
    check_currency_setting(session, settings.currency)  # never relabel the ledger's money
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
        posts, unroutable = plan_anomaly_posts(
            session=session, settings=settings, as_of=as_of, router=router
        )
        extra.extend(posts)
        report.unroutable.extend(unroutable)
    if "unallocated" in checks:
        posts, unroutable = plan_unallocated_post(
            session=session, settings=settings, as_of=as_of, router=router
        )
        extra.extend(posts)
        report.unroutable.extend(unroutable)
    if "waste" in checks:
        posts, unroutable = plan_waste_posts(
            session=session, settings=settings, as_of=as_of, router=router
        )
        extra.extend(posts)
        report.unroutable.extend(unroutable)
    if extra:
        known = set(also_sent) | set(
            session.scalars(
                select(OutboxMessage.dedupe_key).where(
                    OutboxMessage.dedupe_key.in_([p.dedupe_key for p in extra])
                )
            )
        )
        report.planned.extend(p for p in extra if p.dedupe_key not in known)
    for key in report.unroutable:
        log.warning(
            "alert %s has no channel: set the model's or team's channel, or "
            "finops_channel in the registry",
            key,
        )
    return report


def queue_posts(session: Session, posts: Iterable[PlannedPost]) -> int:
    """Record planned posts in the outbox; return how many were new."""
    return len(enqueue_many(session, posts))


class PolledSource:
    """A configured poll source, named by its MLCOST_POLL_SOURCES entry (stable across polls).

    Building the real source can fail (no AWS region, say); that error is raised when the
    source is read, so it fails this source's fetch and not the whole poll.
    """

    def __init__(self, name: str, kind: str, build: Callable[[], SpendSource]) -> None:
        self.name = name
        self.kind = kind
        self.location = name
        self._source: SpendSource | Exception
        try:
            self._source = build()
            self.location = self._source.location
        except Exception as exc:
            self._source = exc

    def read(self, tag_keys: set[str], progress: Progress | None = None) -> SourceData:
        """Read the source (or raise why it could not be built)."""
        if isinstance(self._source, Exception):
            raise self._source
        return self._source.read(tag_keys, progress)


def source_name(source: SpendSource) -> str:
    """Return the name a source's failures are recorded under."""
    return source.name if isinstance(source, PolledSource) else source.location


def configured_sources(
    settings: Settings,
    today: dt.date,
    *,
    model_tag_key: str,
    aws: AwsClientFactory = aws_client,
    ce_client: Any = None,
    s3_client: Any = None,
) -> list[PolledSource]:
    """Return the sources a scheduled poll re-reads (MLCOST_POLL_SOURCES).

    Cost Explorer re-reads its trailing window of days; a CUR or FOCUS export in S3 (or a
    folder) re-reads its previous and current billing periods. Cost Explorer groups by
    `model_tag_key` (registry.sync.cost_explorer_tag_key decides it). AWS clients come from
    `aws` when the source is built (at fetch time) unless one is given.
    """
    sources: list[PolledSource] = []
    for kind, location in settings.poll_source_specs():
        if kind in ("cost-explorer", "ce") and location is None:

            def build_ce() -> SpendSource:
                from bot.ingest.sources.cost_explorer import CE_REGION, CostExplorerSource

                return CostExplorerSource(
                    ce_client or aws("ce", CE_REGION),
                    today - dt.timedelta(days=settings.poll_lookback_days),
                    today,
                    model_tag_key=model_tag_key,
                    second_group=settings.cost_explorer_group_key,
                    billing_account=settings.aws_billing_account or "aws",
                    default_currency=settings.currency,
                )

            sources.append(PolledSource("cost-explorer", "cost-explorer", build_ce))
        elif kind in EXPORT_KINDS and location:

            def build_export(kind: str = kind, location: str = location) -> SpendSource:
                return RecentExportSource(
                    kind,
                    location,
                    recent_periods(today),
                    s3_client=s3_client or (aws("s3") if is_s3(location) else None),
                    default_currency=settings.currency,
                )

            sources.append(PolledSource(f"{kind}:{location}", kind, build_export))
        else:
            raise MlcostError(
                f"MLCOST_POLL_SOURCES: cannot poll {kind + (':' + location if location else '')!r};"
                " use cost-explorer, cur:s3://bucket/prefix/ or focus:s3://bucket/prefix/"
            )
    return sources


def fetch_sources(
    session_factory: sessionmaker[Session],
    sources: Sequence[SpendSource],
    report: CycleReport,
    *,
    now: dt.datetime | None = None,
) -> None:
    """Ingest each source in its own transaction; a failing source does not stop the cycle.

    Whatever a source raises is logged (with its traceback unless it is one of our own
    explained errors, credentials masked) and recorded for /healthz until it is next fetched.
    """
    at = now or dt.datetime.now(dt.UTC)
    for source in sources:
        name = source_name(source)
        try:
            with session_scope(session_factory) as session:
                report.fetched.append(ingest(source, session=session))
                clear_source_failure(session=session, source=name)
        except Exception as exc:
            if isinstance(exc, MlcostError):
                log.error("poll of %s failed: %s", name, redact(str(exc)))
                report.fetch_errors.append(redact(str(exc)))
            else:
                log.error(
                    "poll of %s failed (%s); the other sources go on\n%s",
                    name,
                    type(exc).__name__,
                    redact("".join(traceback.format_exception(exc)).rstrip()),
                )
                report.fetch_errors.append(f"{name}: {type(exc).__name__}: {redact(str(exc))}")
            _record_failure(session_factory, name, exc, at)


def _record_failure(
    session_factory: sessionmaker[Session], name: str, exc: Exception, now: dt.datetime
) -> None:
    try:
        with session_scope(session_factory) as session:
            record_source_failure(session=session, source=name, exc=exc, now=now)
    except Exception:
        log.exception("could not record the failure of %s for /healthz", name)


def run_cycle(
    *,
    session_factory: sessionmaker[Session],
    settings: Settings,
    now: dt.datetime,
    as_of: dt.date | None = None,
    sources: Sequence[SpendSource] = (),
    notifier: Notifier | None = None,
    find_posted: FindPosted | None = None,
    checks: Sequence[str] = ALL_CHECKS,
    dry_run: bool = False,
    clock: Callable[[], dt.datetime] | None = None,
) -> CycleReport:
    """Fetch sources, plan and queue every alert due as of a day, then deliver what is pending.

    Delivery reads `clock` when it claims each message (fetching may take minutes); without one
    it delivers as of `now`.
    """
    day = as_of or default_as_of(now, settings.timezone)
    fetched = CycleReport(as_of=day)
    if not dry_run:
        fetch_sources(session_factory, sources, fetched, now=now)
    with session_scope(session_factory) as session:
        report = plan_alerts(session=session, settings=settings, as_of=day, now=now, checks=checks)
        if not dry_run:
            report.queued = queue_posts(session, report.planned)
    report.fetched, report.fetch_errors = fetched.fetched, fetched.fetch_errors
    if notifier is not None and not dry_run:
        report.delivery = deliver_outbox(
            session_factory=session_factory,
            settings=settings,
            notifier=notifier,
            now=None if clock is not None else now,
            clock=clock,
            find_posted=find_posted,
        )
    return report


def deliver_outbox(
    *,
    session_factory: sessionmaker[Session],
    settings: Settings,
    notifier: Notifier,
    now: dt.datetime | None = None,
    clock: Callable[[], dt.datetime] | None = None,
    find_posted: FindPosted | None = None,
) -> DeliveryReport:
    """Deliver every pending outbox message that is due (as of `now`, or by `clock`)."""
    return deliver_pending(
        session_factory=session_factory,
        notifier=notifier,
        now=now,
        clock=clock,
        find_posted=find_posted,
        lease=dt.timedelta(seconds=settings.outbox_lease_seconds),
    )


def alert_summary(post: PlannedPost) -> str:
    """Return one line describing a planned post."""
    return f"{post.channel:<12} {post.text}"
