"""The database schema: registry, ledger, alerts outbox, value metrics and reviews.

No `from __future__ import annotations` here: with string annotations SQLAlchemy has to evaluate
each `Mapped[...]` again when it declares the classes (about 12 ms, a seventh of this module's
import time, in every command that opens the database; issue 24). Forward references are quoted.
"""

import datetime as dt
from decimal import ROUND_HALF_EVEN, Decimal
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Numeric,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

STAGES = ("training", "serving", "storage", "data", "other")


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timezone-aware datetime stored as UTC on every dialect (SQLite drops offsets)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Any) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given; use an aware datetime")
        return value.astimezone(dt.UTC)

    def process_result_value(self, value: dt.datetime | None, dialect: Any) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


NUMERIC_OID = 1700  # PostgreSQL's type code for NUMERIC in a result's description


class ExactDecimal(TypeDecorator[Decimal]):
    """NUMERIC on PostgreSQL; on SQLite (no decimal type) a scaled BIGINT, so sums stay exact.

    SQLite's limit is therefore 9.2e18 scaled units per value or SUM: $922M at 10 places.
    """

    impl = Numeric
    cache_ok = True

    def __init__(self, precision: int, scale: int) -> None:
        super().__init__(precision, scale, asdecimal=True)
        self.precision = precision
        self.scale = scale

    def load_dialect_impl(self, dialect: Any) -> Any:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(BigInteger())
        return dialect.type_descriptor(Numeric(self.precision, self.scale, asdecimal=True))

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        if value is None:
            return None
        exact = value if isinstance(value, Decimal) else Decimal(str(value))
        if dialect.name == "sqlite":
            return int(exact.scaleb(self.scale).to_integral_value(ROUND_HALF_EVEN))
        return exact

    def result_processor(self, dialect: Any, coltype: Any) -> Any:
        # PostgreSQL's NUMERIC arrives as a Decimal already (psycopg): no call per value, which
        # budget evaluation at scale makes 400,000 times (issue 24)
        if dialect.name == "postgresql" and coltype == NUMERIC_OID:
            return None
        return super().result_processor(dialect, coltype)

    def process_result_value(self, value: Any, dialect: Any) -> Decimal | None:
        if value is None:
            return None
        if dialect.name == "sqlite":
            return Decimal(int(value)).scaleb(-self.scale)
        return value if isinstance(value, Decimal) else Decimal(str(value))


Money = ExactDecimal(24, 10)
# A budget has at most 4 decimals (what a BudgetSpec allows): scaled by 10^4 on SQLite it holds
# the $1,000,000,000,000 limit (bot/budgets/admin.py), which 10 places ($922M) could not.
BudgetMoney = ExactDecimal(24, 4)
Quantity = ExactDecimal(28, 6)


class JSONType(TypeDecorator[Any]):
    """JSON, stored as JSONB on PostgreSQL (as migration 0001 made the columns).

    The JSONB type is looked up when a PostgreSQL connection first needs it, so defining the
    tables does not import PostgreSQL's dialect package (its drivers' modules, 40 ms).
    """

    impl = JSON
    cache_ok = True
    # As JSON: None is stored as JSON's null, and an unset column is left out of the INSERT.
    should_evaluate_none = True

    def load_dialect_impl(self, dialect: Any) -> Any:
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB())
        return dialect.type_descriptor(JSON())


def utcnow() -> dt.datetime:
    """Return the current time, aware, in UTC."""
    return dt.datetime.now(dt.UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Team(Base):
    __tablename__ = "teams"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    channel: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)

    models: Mapped[list["MLModel"]] = relationship(back_populates="team")
    owners: Mapped[list["Owner"]] = relationship(
        primaryjoin="Team.id == Owner.team_id", cascade="all, delete-orphan", viewonly=False
    )


class MLModel(Base):
    __tablename__ = "models"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"))
    channel: Mapped[str | None] = mapped_column(String(40))
    match: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    description: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20), default="active")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    # the registry's `gate:` policy (bot.registry.spec.GatePolicySpec as JSON); None: no policy
    gate_policy: Mapped[dict[str, Any] | None] = mapped_column(JSONType)

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

    __tablename__ = "owners"
    __table_args__ = (UniqueConstraint("team_id", "model_id", "user_id", name="uq_owners_scope"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    model_id: Mapped[int | None] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(String(40))


class Admin(Base):
    __tablename__ = "admins"

    user_id: Mapped[str] = mapped_column(String(40), primary_key=True)


class RegistrySetting(Base):
    """Organisation-wide settings from the registry: FinOps channel, tag keys, stage rules."""

    __tablename__ = "registry_settings"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[Any] = mapped_column(JSONType)


class Budget(Base):
    __tablename__ = "budgets"

    id: Mapped[int] = mapped_column(primary_key=True)
    scope: Mapped[str] = mapped_column(String(250), unique=True)
    model_name: Mapped[str | None] = mapped_column(String(100))
    team_name: Mapped[str | None] = mapped_column(String(100))
    stage: Mapped[str | None] = mapped_column(String(20))
    # the amount per `period` (the column predates periods other than the month)
    monthly_amount: Mapped[Decimal] = mapped_column(BudgetMoney)
    # daily, weekly (ISO, Monday to Sunday), monthly or quarterly (calendar quarters)
    period: Mapped[str] = mapped_column(String(10), default="monthly", server_default="monthly")
    thresholds: Mapped[list[int]] = mapped_column(JSONType, default=list)
    forecast: Mapped[bool] = mapped_column(Boolean, default=False)
    forecast_threshold: Mapped[int] = mapped_column(Integer, default=100)
    # bumped whenever monthly_amount changes: the alerts of a new amount are new alerts
    amount_revision: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # the amount's currency: only spend billed in it counts against the budget
    currency: Mapped[str] = mapped_column(String(3), default="USD", server_default="USD")
    updated_by: Mapped[str | None] = mapped_column(String(40))
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    # bumped by every change from Slack, under the row's lock (bot/db/locks.py: claim_row)
    version: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))


class IngestionRun(Base):
    __tablename__ = "ingestion_runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    source: Mapped[str] = mapped_column(String(40))
    location: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20), default="running")
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    rows_read: Mapped[int] = mapped_column(Integer, default=0)
    rows_written: Mapped[int] = mapped_column(Integer, default=0)
    api_requests: Mapped[int] = mapped_column(Integer, default=0)
    # these four are 0 for a run billed in several currencies: see currency_totals
    billed_total: Mapped[Decimal] = mapped_column(Money, default=Decimal(0))
    effective_total: Mapped[Decimal] = mapped_column(Money, default=Decimal(0))
    attributed_total: Mapped[Decimal] = mapped_column(Money, default=Decimal(0))
    unallocated_total: Mapped[Decimal] = mapped_column(Money, default=Decimal(0))
    # currency -> {"billed", "effective", "attributed", "unallocated"} as exact strings
    currency_totals: Mapped[dict[str, dict[str, str]] | None] = mapped_column(JSONType)
    replaced_rows: Mapped[int] = mapped_column(Integer, default=0)
    scopes: Mapped[list[dict[str, str]]] = mapped_column(JSONType, default=list)
    error: Mapped[str | None] = mapped_column(Text)
    # the same dollars also billed by another source (bot.ingest.overlap.Overlap.as_dict)
    overlaps: Mapped[list[dict[str, str]] | None] = mapped_column(JSONType)


class SourceFailure(Base):
    """A poll source whose last fetch failed: which, when, and a short safe reason (/healthz)."""

    __tablename__ = "source_failures"

    source: Mapped[str] = mapped_column(String(300), primary_key=True)
    failed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    error: Mapped[str] = mapped_column(String(100))
    message: Mapped[str] = mapped_column(Text)


class LedgerLine:
    """The columns of one ledger line: what daily_spend counts and overlapping_spend sets aside."""

    day: Mapped[dt.date] = mapped_column(Date)
    billing_period: Mapped[dt.date] = mapped_column(Date)
    provider: Mapped[str] = mapped_column(String(60))
    billing_account: Mapped[str] = mapped_column(String(200))
    sub_account: Mapped[str | None] = mapped_column(String(200))
    service: Mapped[str] = mapped_column(String(200))
    service_category: Mapped[str | None] = mapped_column(String(100))
    usage_type: Mapped[str | None] = mapped_column(String(200))
    region: Mapped[str | None] = mapped_column(String(60))
    resource_id: Mapped[str | None] = mapped_column(String(1024))
    instance_type: Mapped[str | None] = mapped_column(String(60))
    charge_category: Mapped[str] = mapped_column(String(30), default="Usage")
    # the ISO 4217 code the row was billed in; amounts in different currencies are never added
    # (rows from before the column existed are USD: see migration 0005)
    currency: Mapped[str] = mapped_column(String(3), server_default="USD")
    model: Mapped[str | None] = mapped_column(String(100))
    stage: Mapped[str] = mapped_column(String(20))
    team: Mapped[str | None] = mapped_column(String(100))
    model_tag_value: Mapped[str | None] = mapped_column(String(256))
    attribution: Mapped[str] = mapped_column(String(40))
    # the training run (ml:run tag or SageMaker training job), not the ingestion run (run_id)
    run: Mapped[str | None] = mapped_column(String(256))
    billed_cost: Mapped[Decimal] = mapped_column(Money)
    effective_cost: Mapped[Decimal] = mapped_column(Money)
    usage_quantity: Mapped[Decimal] = mapped_column(Quantity, default=Decimal(0))
    gpu_hours: Mapped[Decimal] = mapped_column(Quantity, default=Decimal(0))
    estimated: Mapped[bool] = mapped_column(Boolean, default=False)
    # the EC2 instance a Kubernetes allocation ran on (from its providerID), or that a
    # node_offset row is for: bot.ingest.nodes counts the node's dollars once
    node: Mapped[str | None] = mapped_column(String(200))
    # mlcost's own row, not a source's: it moves a billed node's cost to the allocations on it
    # (bill side) or takes off allocations above the bill; recomputed on every ingestion
    node_offset: Mapped[bool] = mapped_column(Boolean, server_default=false())


class DailySpend(LedgerLine, Base):
    """One day of attributed spend for one resource, service and attribution."""

    __tablename__ = "daily_spend"
    __table_args__ = (
        Index("ix_daily_spend_day_model", "day", "model"),
        Index("ix_daily_spend_day_team", "day", "team"),
        Index("ix_daily_spend_scope", "provider", "billing_account", "day"),
        # a model's runs over a window: its month's runs, the run behind an anomaly
        Index("ix_daily_spend_model_day_run", "model", "day", "run"),
        # covered days and the ledger's currencies, one index probe each (bot/spend/coverage.py)
        Index("ix_daily_spend_coverage", "currency", "charge_category", "day"),
    )

    id: Mapped[int] = mapped_column(primary_key=True, sort_order=-2)
    run_id: Mapped[int] = mapped_column(
        ForeignKey("ingestion_runs.id", ondelete="CASCADE"), index=True, sort_order=-1
    )


class OverlappingSpend(LedgerLine, Base):
    """Ledger rows set aside: the same dollars are in the ledger from a source that counts first.

    A row moves here from daily_spend (and back) as bot.ingest.overlap decides; nothing reads
    this table to sum spend, so every report, budget and chargeback counts each dollar once.
    """

    __tablename__ = "overlapping_spend"
    __table_args__ = (Index("ix_overlapping_spend_scope", "provider", "billing_account", "day"),)

    id: Mapped[int] = mapped_column(primary_key=True, sort_order=-3)
    run_id: Mapped[int] = mapped_column(
        ForeignKey("ingestion_runs.id", ondelete="CASCADE"), index=True, sort_order=-2
    )
    # the source kind whose rows count for these dollars (`cur`, `focus`, ...)
    counted_by: Mapped[str] = mapped_column(String(40), sort_order=-1)


class SpendRollup(Base):
    """The ledger summed by (day, model, team, stage, currency): what budget evaluation reads.

    The ledger keeps it in step: every ingestion sums again the days it replaced or wrote, in the
    same transaction (bot.ingest.rollup.refresh_rollup).
    """

    __tablename__ = "spend_rollup"
    __table_args__ = (
        # budget evaluation groups a window by (model, team, stage): with this order the grouping
        # streams from the index, which holds every column it reads
        Index(
            "ix_spend_rollup_scan",
            "model",
            "team",
            "stage",
            "currency",
            "day",
            "billed_cost",
            "effective_cost",
            "gpu_hours",
        ),
        Index("ix_spend_rollup_day", "day"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    day: Mapped[dt.date] = mapped_column(Date)
    model: Mapped[str | None] = mapped_column(String(100))
    team: Mapped[str | None] = mapped_column(String(100))
    stage: Mapped[str] = mapped_column(String(20))
    currency: Mapped[str] = mapped_column(String(3), server_default="USD")
    billed_cost: Mapped[Decimal] = mapped_column(Money)
    effective_cost: Mapped[Decimal] = mapped_column(Money)
    gpu_hours: Mapped[Decimal] = mapped_column(Quantity)


class AuditLog(Base):
    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    actor: Mapped[str] = mapped_column(String(40))
    action: Mapped[str] = mapped_column(String(60))
    target: Mapped[str] = mapped_column(String(250))
    detail: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)


class OutboxStatus(StrEnum):
    """Where an outbox message stands; stored as its plain string value."""

    PENDING = "pending"  # waiting for its first or next attempt
    SENDING = "sending"  # claimed by a worker until its lease runs out
    DELIVERED = "delivered"
    FAILED = "failed"  # Slack refused it for good; not retried
    UPLOADING = "uploading"  # a review chart claimed for upload (review/service.py)


class OutboxMessage(Base):
    """A Slack post recorded before it is sent, so it is delivered once even across restarts."""

    __tablename__ = "outbox"

    id: Mapped[int] = mapped_column(primary_key=True)
    dedupe_key: Mapped[str] = mapped_column(String(300), unique=True)
    kind: Mapped[str] = mapped_column(String(40))
    channel: Mapped[str] = mapped_column(String(40))
    thread_key: Mapped[str | None] = mapped_column(String(300))
    payload: Mapped[dict[str, Any]] = mapped_column(JSONType)
    status: Mapped[str] = mapped_column(String(20), default=OutboxStatus.PENDING)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    next_attempt_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    delivered_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    slack_ts: Mapped[str | None] = mapped_column(String(40))
    slack_channel: Mapped[str | None] = mapped_column(String(40))


class AlertSilence(Base):
    """An Acknowledge or Snooze on a budget, recorded with who and when."""

    __tablename__ = "alert_silences"

    id: Mapped[int] = mapped_column(primary_key=True)
    budget_scope: Mapped[str] = mapped_column(String(250), index=True)
    # the budget period's label: `2026-11`, or `w2026-11-23` (bot.periods.budget_period)
    period: Mapped[str] = mapped_column(String(20))
    kind: Mapped[str] = mapped_column(String(20))
    until: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    user_id: Mapped[str] = mapped_column(String(40))
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    reason: Mapped[str | None] = mapped_column(Text)
    # the budget's amount_revision when given: a changed amount is not silenced by it
    budget_revision: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class ValueMetric(Base):
    """Value a model created on a day: predictions, decisions or any named unit."""

    __tablename__ = "value_metrics"
    __table_args__ = (
        UniqueConstraint("model_name", "day", "metric", "source", name="uq_value_metrics_key"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    model_name: Mapped[str] = mapped_column(String(100), index=True)
    day: Mapped[dt.date] = mapped_column(Date)
    metric: Mapped[str] = mapped_column(String(60))
    units: Mapped[Decimal] = mapped_column(Quantity)
    revenue: Mapped[Decimal | None] = mapped_column(Money)
    source: Mapped[str] = mapped_column(String(40), default="manual")
    recorded_by: Mapped[str | None] = mapped_column(String(40))
    recorded_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class Review(Base):
    """A team's monthly kill-or-keep review thread."""

    __tablename__ = "reviews"
    __table_args__ = (UniqueConstraint("month", "team_name", name="uq_reviews_month_team"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    month: Mapped[str] = mapped_column(String(7))
    team_name: Mapped[str] = mapped_column(String(100))
    channel: Mapped[str] = mapped_column(String(40))
    parent_ts: Mapped[str | None] = mapped_column(String(40))
    status: Mapped[str] = mapped_column(String(20), default="open")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    closed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    # bumped by every decision under the review's row lock (compare-and-set; see record_decision)
    # and by every thread refresh that could not confirm what Slack shows (see refresh_messages)
    version: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))

    items: Mapped[list["ReviewItem"]] = relationship(
        back_populates="review", cascade="all, delete-orphan"
    )


class ReviewItem(Base):
    """One model in a review, with its recorded decision."""

    __tablename__ = "review_items"
    __table_args__ = (
        UniqueConstraint("review_id", "model_name", name="uq_review_items_review_model"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    review_id: Mapped[int] = mapped_column(ForeignKey("reviews.id", ondelete="CASCADE"))
    model_name: Mapped[str] = mapped_column(String(100))
    message_ts: Mapped[str | None] = mapped_column(String(40))
    snapshot: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    decision: Mapped[str | None] = mapped_column(String(20))
    decided_by: Mapped[str | None] = mapped_column(String(40))
    decided_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    reason: Mapped[str | None] = mapped_column(Text)
    reminded_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    # set with a decision, cleared once Slack shows it; the delivery job retries what is still set
    refresh_pending: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # why Slack refused the refresh for good (the flag is then cleared); reset by a new decision
    refresh_error: Mapped[str | None] = mapped_column(Text)

    review: Mapped[Review] = relationship(back_populates="items")


class SignOff(Base):
    """An owner's weekly sign-off of a model's spend."""

    __tablename__ = "signoffs"
    __table_args__ = (UniqueConstraint("model_name", "week_start", name="uq_signoffs_week"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    model_name: Mapped[str] = mapped_column(String(100))
    week_start: Mapped[dt.date] = mapped_column(Date)
    user_id: Mapped[str] = mapped_column(String(40))
    signed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class ResourceFindingRecord(Base):
    """A resource the scan found burning money, followed across scans (bot/waste/lifecycle.py).

    Keyed by (account, region, kind, resource_id). `decision` is none, keep, not_waste or stop;
    `decision_monthly_cost` is the monthly cost when it was taken (Keep and Not waste are
    re-raised when the cost grows by more than half over it). `saved_so_far` is written when the
    finding closes; reports compute it again as time passes (lifecycle.saved_so_far).
    """

    __tablename__ = "resource_findings"
    __table_args__ = (
        UniqueConstraint(
            "account", "region", "kind", "resource_id", name="uq_resource_findings_key"
        ),
        Index("ix_resource_findings_status", "status", "account"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    account: Mapped[str] = mapped_column(String(40))
    region: Mapped[str] = mapped_column(String(40))
    kind: Mapped[str] = mapped_column(String(40))
    resource_id: Mapped[str] = mapped_column(String(1024))
    status: Mapped[str] = mapped_column(String(10), default="open")
    first_seen: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    last_seen: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    monthly_cost: Mapped[Decimal] = mapped_column(Money)
    raised_monthly_cost: Mapped[Decimal] = mapped_column(Money)
    last_posted_monthly_cost: Mapped[Decimal | None] = mapped_column(Money)
    post_count: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    last_posted_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    currency: Mapped[str] = mapped_column(String(3), default="USD", server_default="USD")
    model: Mapped[str | None] = mapped_column(String(100))
    team: Mapped[str | None] = mapped_column(String(100))
    channel: Mapped[str | None] = mapped_column(String(40))
    reason: Mapped[str] = mapped_column(String(40))
    action: Mapped[str] = mapped_column(String(40))
    target: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # the finding as the last scan saw it (ResourceFinding.to_dict()): what the post shows
    details: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    decision: Mapped[str] = mapped_column(String(20), default="none", server_default="none")
    decided_by: Mapped[str | None] = mapped_column(String(40))
    decided_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    keep_until: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    decision_monthly_cost: Mapped[Decimal | None] = mapped_column(Money)
    closed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    saved_so_far: Mapped[Decimal | None] = mapped_column(Money)
    # "acting" while a Stop it runs (claimed, so a retried press cannot act again), then
    # "done: ...", "refused: protected ...", "disabled: approval recorded only", "failed: CODE"
    action_result: Mapped[str | None] = mapped_column(Text)
    action_count: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))
    action_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    # bumped by every decision and Stop it step, under the row's lock (bot/db/locks.py: claim_row)
    version: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))


class AnomalyExpectation(Base):
    """An owner's answer to an anomaly post: Expected or Not expected, once per anomaly.

    `anomaly_key` is the post's outbox key, unique: a second click records nothing. An
    `expected` answer names the anomaly's top driver (a daily_spend dimension and value) with its
    spend that day (`level`) and usual day (`usual`); until the month ends, that driver's rise up
    to `level` no longer makes the scope's spend anomalous (bot/anomalies/drivers.py).
    """

    __tablename__ = "anomaly_expectations"
    __table_args__ = (Index("ix_anomaly_expectations_scope", "scope", "month"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    anomaly_key: Mapped[str] = mapped_column(String(300), unique=True)
    kind: Mapped[str] = mapped_column(String(20))
    scope: Mapped[str] = mapped_column(String(250))
    answer: Mapped[str] = mapped_column(String(20))  # expected | not_expected
    month: Mapped[str] = mapped_column(String(7))
    anomaly_day: Mapped[dt.date] = mapped_column(Date)
    amount: Mapped[Decimal] = mapped_column(Money)  # the scope's spend that day
    excess: Mapped[Decimal] = mapped_column(Money)  # and how far above usual
    dimension: Mapped[str | None] = mapped_column(String(40))
    value: Mapped[str | None] = mapped_column(String(1024))
    level: Mapped[Decimal | None] = mapped_column(Money)
    usual: Mapped[Decimal | None] = mapped_column(Money)
    currency: Mapped[str] = mapped_column(String(3), default="USD", server_default="USD")
    user_id: Mapped[str] = mapped_column(String(40))
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
