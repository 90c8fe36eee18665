"""The ORM's classes for the services that write: each maps one table of bot/db/tables.py.

The tables (columns, types, defaults, constraints, indexes) are defined once, in Core, in
bot/db/tables.py; here each class names its Table, types its attributes for mypy and adds the
relationships. Commands that only read use the tables without this module (issue 24).

No `from __future__ import annotations` here: with string annotations SQLAlchemy has to evaluate
each `Mapped[...]` again when it declares the classes. Forward references are quoted.
"""

import datetime as dt
from decimal import Decimal
from typing import Any

from sqlalchemy.orm import DeclarativeBase, Mapped, relationship

from bot.db import tables


class Base(DeclarativeBase):
    metadata = tables.metadata


class Team(Base):
    __table__ = tables.teams

    id: Mapped[int]
    name: Mapped[str]
    channel: Mapped[str | None]
    created_at: Mapped[dt.datetime]

    models: Mapped[list["MLModel"]] = relationship(back_populates="team")
    owners: Mapped[list["Owner"]] = relationship(
        primaryjoin="Team.id == Owner.team_id", cascade="all, delete-orphan", viewonly=False
    )


class MLModel(Base):
    __table__ = tables.models

    id: Mapped[int]
    name: Mapped[str]
    team_id: Mapped[int]
    channel: Mapped[str | None]
    match: Mapped[dict[str, Any]]
    description: Mapped[str | None]
    status: Mapped[str]
    created_at: Mapped[dt.datetime]
    # the registry's `gate:` policy (bot.registry.spec.GatePolicySpec as JSON); None: no policy
    gate_policy: Mapped[dict[str, Any] | None]

    team: Mapped[Team] = relationship(back_populates="models")
    owners: Mapped[list["Owner"]] = relationship(
        primaryjoin="MLModel.id == Owner.model_id", cascade="all, delete-orphan", viewonly=False
    )

    @property
    def effective_channel(self) -> str | None:
        """Return the model's channel, or its team's."""
        return self.channel or self.team.channel


class Owner(Base):
    """A Slack user who owns a team or a model."""

    __table__ = tables.owners

    id: Mapped[int]
    team_id: Mapped[int | None]
    model_id: Mapped[int | None]
    user_id: Mapped[str]


class Admin(Base):
    __table__ = tables.admins

    user_id: Mapped[str]


class RegistrySetting(Base):
    """Organisation-wide settings from the registry: FinOps channel, tag keys, stage rules."""

    __table__ = tables.registry_settings

    key: Mapped[str]
    value: Mapped[Any]


class Budget(Base):
    __table__ = tables.budgets

    id: Mapped[int]
    scope: Mapped[str]
    model_name: Mapped[str | None]
    team_name: Mapped[str | None]
    stage: Mapped[str | None]
    # the amount per `period` (the column predates periods other than the month)
    monthly_amount: Mapped[Decimal]
    # daily, weekly (ISO, Monday to Sunday), monthly or quarterly (calendar quarters)
    period: Mapped[str]
    thresholds: Mapped[list[int]]
    forecast: Mapped[bool]
    forecast_threshold: Mapped[int]
    # bumped whenever monthly_amount changes: the alerts of a new amount are new alerts
    amount_revision: Mapped[int]
    # the amount's currency: only spend billed in it counts against the budget
    currency: Mapped[str]
    updated_by: Mapped[str | None]
    updated_at: Mapped[dt.datetime]
    # bumped by every change from Slack, under the row's lock (bot/db/locks.py: claim_row)
    version: Mapped[int]


class IngestionRun(Base):
    __table__ = tables.ingestion_runs

    id: Mapped[int]
    source: Mapped[str]
    location: Mapped[str]
    status: Mapped[str]
    started_at: Mapped[dt.datetime]
    finished_at: Mapped[dt.datetime | None]
    rows_read: Mapped[int]
    rows_written: Mapped[int]
    api_requests: Mapped[int]
    # these four are 0 for a run billed in several currencies: see currency_totals
    billed_total: Mapped[Decimal]
    effective_total: Mapped[Decimal]
    attributed_total: Mapped[Decimal]
    unallocated_total: Mapped[Decimal]
    # currency -> {"billed", "effective", "attributed", "unallocated"} as exact strings
    currency_totals: Mapped[dict[str, dict[str, str]] | None]
    replaced_rows: Mapped[int]
    scopes: Mapped[list[dict[str, str]]]
    error: Mapped[str | None]
    # the same dollars also billed by another source (bot.ingest.overlap.Overlap.as_dict)
    overlaps: Mapped[list[dict[str, str]] | None]


class SourceFailure(Base):
    """A poll source whose last fetch failed: which, when, and a short safe reason (/healthz)."""

    __table__ = tables.source_failures

    source: Mapped[str]
    failed_at: Mapped[dt.datetime]
    error: Mapped[str]
    message: Mapped[str]


class LedgerLine:
    """The typed columns of one ledger line (bot.db.tables.ledger_line_columns: what each is)."""

    day: Mapped[dt.date]
    billing_period: Mapped[dt.date]
    provider: Mapped[str]
    billing_account: Mapped[str]
    sub_account: Mapped[str | None]
    service: Mapped[str]
    service_category: Mapped[str | None]
    usage_type: Mapped[str | None]
    region: Mapped[str | None]
    resource_id: Mapped[str | None]
    instance_type: Mapped[str | None]
    charge_category: Mapped[str]
    currency: Mapped[str]
    model: Mapped[str | None]
    stage: Mapped[str]
    team: Mapped[str | None]
    model_tag_value: Mapped[str | None]
    attribution: Mapped[str]
    run: Mapped[str | None]
    billed_cost: Mapped[Decimal]
    effective_cost: Mapped[Decimal]
    usage_quantity: Mapped[Decimal]
    gpu_hours: Mapped[Decimal]
    estimated: Mapped[bool]
    node: Mapped[str | None]
    node_offset: Mapped[bool]


class DailySpend(LedgerLine, Base):
    """One day of attributed spend for one resource, service and attribution."""

    __table__ = tables.daily_spend

    id: Mapped[int]
    run_id: Mapped[int]


class OverlappingSpend(LedgerLine, Base):
    """Ledger rows set aside: the same dollars are in the ledger from a source that counts first.

    A row moves here from daily_spend (and back) as bot.ingest.overlap decides; nothing reads
    this table to sum spend, so every report, budget and chargeback counts each dollar once.
    """

    __table__ = tables.overlapping_spend

    id: Mapped[int]
    run_id: Mapped[int]
    # the source kind whose rows count for these dollars (`cur`, `focus`, ...)
    counted_by: Mapped[str]


class SpendRollup(Base):
    """The ledger summed by (day, model, team, stage, currency): what budget evaluation reads.

    The ledger keeps it in step: every ingestion sums again the days it replaced or wrote, in the
    same transaction (bot.ingest.rollup.refresh_rollup).
    """

    __table__ = tables.spend_rollup

    id: Mapped[int]
    day: Mapped[dt.date]
    model: Mapped[str | None]
    team: Mapped[str | None]
    stage: Mapped[str]
    currency: Mapped[str]
    billed_cost: Mapped[Decimal]
    effective_cost: Mapped[Decimal]
    gpu_hours: Mapped[Decimal]


class AuditLog(Base):
    __table__ = tables.audit_log

    id: Mapped[int]
    at: Mapped[dt.datetime]
    actor: Mapped[str]
    action: Mapped[str]
    target: Mapped[str]
    detail: Mapped[dict[str, Any]]


class OutboxMessage(Base):
    """A Slack post recorded before it is sent, so it is delivered once even across restarts."""

    __table__ = tables.outbox

    id: Mapped[int]
    dedupe_key: Mapped[str]
    kind: Mapped[str]
    channel: Mapped[str]
    thread_key: Mapped[str | None]
    payload: Mapped[dict[str, Any]]
    status: Mapped[str]
    attempts: Mapped[int]
    last_error: Mapped[str | None]
    next_attempt_at: Mapped[dt.datetime | None]
    created_at: Mapped[dt.datetime]
    delivered_at: Mapped[dt.datetime | None]
    slack_ts: Mapped[str | None]
    slack_channel: Mapped[str | None]


class AlertSilence(Base):
    """An Acknowledge or Snooze on a budget, recorded with who and when."""

    __table__ = tables.alert_silences

    id: Mapped[int]
    budget_scope: Mapped[str]
    # the budget period's label: `2026-11`, or `w2026-11-23` (bot.periods.budget_period)
    period: Mapped[str]
    kind: Mapped[str]
    until: Mapped[dt.datetime | None]
    user_id: Mapped[str]
    at: Mapped[dt.datetime]
    reason: Mapped[str | None]
    # the budget's amount_revision when given: a changed amount is not silenced by it
    budget_revision: Mapped[int]


class ValueMetric(Base):
    """Value a model created on a day: predictions, decisions or any named unit."""

    __table__ = tables.value_metrics

    id: Mapped[int]
    model_name: Mapped[str]
    day: Mapped[dt.date]
    metric: Mapped[str]
    units: Mapped[Decimal]
    revenue: Mapped[Decimal | None]
    source: Mapped[str]
    recorded_by: Mapped[str | None]
    recorded_at: Mapped[dt.datetime]


class Review(Base):
    """A team's monthly kill-or-keep review thread."""

    __table__ = tables.reviews

    id: Mapped[int]
    month: Mapped[str]
    team_name: Mapped[str]
    channel: Mapped[str]
    parent_ts: Mapped[str | None]
    status: Mapped[str]
    created_at: Mapped[dt.datetime]
    closed_at: Mapped[dt.datetime | None]
    # bumped by every decision under the review's row lock (compare-and-set; see record_decision)
    # and by every thread refresh that could not confirm what Slack shows (see refresh_messages)
    version: Mapped[int]

    items: Mapped[list["ReviewItem"]] = relationship(
        back_populates="review", cascade="all, delete-orphan"
    )


class ReviewItem(Base):
    """One model in a review, with its recorded decision."""

    __table__ = tables.review_items

    id: Mapped[int]
    review_id: Mapped[int]
    model_name: Mapped[str]
    message_ts: Mapped[str | None]
    snapshot: Mapped[dict[str, Any]]
    decision: Mapped[str | None]
    decided_by: Mapped[str | None]
    decided_at: Mapped[dt.datetime | None]
    reason: Mapped[str | None]
    reminded_at: Mapped[dt.datetime | None]
    # set with a decision, cleared once Slack shows it; the delivery job retries what is still set
    refresh_pending: Mapped[bool]
    # why Slack refused the refresh for good (the flag is then cleared); reset by a new decision
    refresh_error: Mapped[str | None]

    review: Mapped[Review] = relationship(back_populates="items")


class SignOff(Base):
    """An owner's weekly sign-off of a model's spend."""

    __table__ = tables.signoffs

    id: Mapped[int]
    model_name: Mapped[str]
    week_start: Mapped[dt.date]
    user_id: Mapped[str]
    signed_at: Mapped[dt.datetime]


class ResourceFindingRecord(Base):
    """A resource the scan found burning money, followed across scans (bot/waste/lifecycle.py).

    Keyed by (account, region, kind, resource_id). `decision` is none, keep, not_waste or stop;
    `decision_monthly_cost` is the monthly cost when it was taken (Keep and Not waste are
    re-raised when the cost grows by more than half over it). `saved_so_far` is written when the
    finding closes; reports compute it again as time passes (lifecycle.saved_so_far).
    """

    __table__ = tables.resource_findings

    id: Mapped[int]
    account: Mapped[str]
    region: Mapped[str]
    kind: Mapped[str]
    resource_id: Mapped[str]
    status: Mapped[str]
    first_seen: Mapped[dt.datetime]
    last_seen: Mapped[dt.datetime]
    monthly_cost: Mapped[Decimal]
    raised_monthly_cost: Mapped[Decimal]
    last_posted_monthly_cost: Mapped[Decimal | None]
    post_count: Mapped[int]
    last_posted_at: Mapped[dt.datetime | None]
    currency: Mapped[str]
    model: Mapped[str | None]
    team: Mapped[str | None]
    channel: Mapped[str | None]
    reason: Mapped[str]
    action: Mapped[str]
    target: Mapped[dict[str, Any]]
    # the finding as the last scan saw it (ResourceFinding.to_dict()): what the post shows
    details: Mapped[dict[str, Any]]
    decision: Mapped[str]
    decided_by: Mapped[str | None]
    decided_at: Mapped[dt.datetime | None]
    keep_until: Mapped[dt.datetime | None]
    decision_monthly_cost: Mapped[Decimal | None]
    closed_at: Mapped[dt.datetime | None]
    saved_so_far: Mapped[Decimal | None]
    # "acting" while a Stop it runs (claimed, so a retried press cannot act again), then
    # "done: ...", "refused: protected ...", "disabled: approval recorded only", "failed: CODE"
    action_result: Mapped[str | None]
    action_count: Mapped[int]
    action_at: Mapped[dt.datetime | None]
    # bumped by every decision and Stop it step, under the row's lock (bot/db/locks.py: claim_row)
    version: Mapped[int]


class AnomalyExpectation(Base):
    """An owner's answer to an anomaly post: Expected or Not expected, once per anomaly.

    `anomaly_key` is the post's outbox key, unique: a second click records nothing. An
    `expected` answer names the anomaly's top driver (a daily_spend dimension and value) with its
    spend that day (`level`) and usual day (`usual`); until the month ends, that driver's rise up
    to `level` no longer makes the scope's spend anomalous (bot/anomalies/drivers.py).
    """

    __table__ = tables.anomaly_expectations

    id: Mapped[int]
    anomaly_key: Mapped[str]
    kind: Mapped[str]
    scope: Mapped[str]
    answer: Mapped[str]
    month: Mapped[str]
    anomaly_day: Mapped[dt.date]
    amount: Mapped[Decimal]
    excess: Mapped[Decimal]
    dimension: Mapped[str | None]
    value: Mapped[str | None]
    level: Mapped[Decimal | None]
    usual: Mapped[Decimal | None]
    currency: Mapped[str]
    user_id: Mapped[str]
    at: Mapped[dt.datetime]
