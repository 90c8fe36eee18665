"""The database's tables as SQLAlchemy Core: registry, ledger, outbox, value metrics, reviews.

The one definition of the schema. Commands that only read (reports, the gate, the audit trail)
query these tables on a Connection and never load SQLAlchemy's ORM (about 0.12 s of a process,
issue 24); bot/db/schema.py maps its classes onto the same Table objects for the services that
write. Migrations compare against `metadata`.
"""

import datetime as dt
from decimal import ROUND_HALF_EVEN, Decimal
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    text,
)

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


class OutboxStatus(StrEnum):
    """Where an outbox message stands; stored as its plain string value."""

    PENDING = "pending"  # waiting for its first or next attempt
    SENDING = "sending"  # claimed by a worker until its lease runs out
    DELIVERED = "delivered"
    FAILED = "failed"  # Slack refused it for good; not retried
    UPLOADING = "uploading"  # a review chart claimed for upload (review/service.py)


metadata = MetaData(naming_convention=NAMING_CONVENTION)


teams = Table(
    "teams",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("channel", String(40)),
    Column("created_at", UTCDateTime, nullable=False, default=utcnow),
)


models = Table(
    "models",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("team_id", Integer, ForeignKey("teams.id"), nullable=False),
    Column("channel", String(40)),
    Column("match", JSONType, nullable=False, default=dict),
    Column("description", Text),
    Column("status", String(20), nullable=False, default="active"),
    Column("created_at", UTCDateTime, nullable=False, default=utcnow),
    Column("gate_policy", JSONType),
)


owners = Table(
    "owners",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("team_id", Integer, ForeignKey("teams.id", ondelete="CASCADE")),
    Column("model_id", Integer, ForeignKey("models.id", ondelete="CASCADE")),
    Column("user_id", String(40), nullable=False),
    UniqueConstraint("team_id", "model_id", "user_id", name="uq_owners_scope"),
)


admins = Table(
    "admins",
    metadata,
    Column("user_id", String(40), primary_key=True),
)


registry_settings = Table(
    "registry_settings",
    metadata,
    Column("key", String(100), primary_key=True),
    Column("value", JSONType, nullable=False),
)


budgets = Table(
    "budgets",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("scope", String(250), nullable=False, unique=True),
    Column("model_name", String(100)),
    Column("team_name", String(100)),
    Column("stage", String(20)),
    Column("monthly_amount", BudgetMoney, nullable=False),
    Column("period", String(10), nullable=False, default="monthly", server_default="monthly"),
    Column("thresholds", JSONType, nullable=False, default=list),
    Column("forecast", Boolean, nullable=False, default=False),
    Column("forecast_threshold", Integer, nullable=False, default=100),
    Column("amount_revision", Integer, nullable=False, default=0, server_default="0"),
    Column("currency", String(3), nullable=False, default="USD", server_default="USD"),
    Column("updated_by", String(40)),
    Column("updated_at", UTCDateTime, nullable=False, default=utcnow),
    Column("version", Integer, nullable=False, default=0, server_default=text("0")),
)


ingestion_runs = Table(
    "ingestion_runs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("source", String(40), nullable=False),
    Column("location", Text, nullable=False),
    Column("status", String(20), nullable=False, default="running"),
    Column("started_at", UTCDateTime, nullable=False, default=utcnow),
    Column("finished_at", UTCDateTime),
    Column("rows_read", Integer, nullable=False, default=0),
    Column("rows_written", Integer, nullable=False, default=0),
    Column("api_requests", Integer, nullable=False, default=0),
    Column("billed_total", Money, nullable=False, default=Decimal(0)),
    Column("effective_total", Money, nullable=False, default=Decimal(0)),
    Column("attributed_total", Money, nullable=False, default=Decimal(0)),
    Column("unallocated_total", Money, nullable=False, default=Decimal(0)),
    Column("currency_totals", JSONType),
    Column("replaced_rows", Integer, nullable=False, default=0),
    Column("scopes", JSONType, nullable=False, default=list),
    Column("error", Text),
    Column("overlaps", JSONType),
)


source_failures = Table(
    "source_failures",
    metadata,
    Column("source", String(300), primary_key=True),
    Column("failed_at", UTCDateTime, nullable=False),
    Column("error", String(100), nullable=False),
    Column("message", Text, nullable=False),
)


def ledger_line_columns() -> list[Column[Any]]:
    """Return new columns of a ledger line: what daily_spend counts and overlapping_spend holds."""
    return [
        Column("day", Date, nullable=False),
        Column("billing_period", Date, nullable=False),
        Column("provider", String(60), nullable=False),
        Column("billing_account", String(200), nullable=False),
        Column("sub_account", String(200)),
        Column("service", String(200), nullable=False),
        Column("service_category", String(100)),
        Column("usage_type", String(200)),
        Column("region", String(60)),
        Column("resource_id", String(1024)),
        Column("instance_type", String(60)),
        Column("charge_category", String(30), nullable=False, default="Usage"),
        # the ISO 4217 code the row was billed in; amounts in different currencies are never
        # added (rows from before the column existed are USD: see migration 0005)
        Column("currency", String(3), nullable=False, server_default="USD"),
        Column("model", String(100)),
        Column("stage", String(20), nullable=False),
        Column("team", String(100)),
        Column("model_tag_value", String(256)),
        Column("attribution", String(40), nullable=False),
        # the training run (ml:run tag or SageMaker training job), not the ingestion run (run_id)
        Column("run", String(256)),
        Column("billed_cost", Money, nullable=False),
        Column("effective_cost", Money, nullable=False),
        Column("usage_quantity", Quantity, nullable=False, default=Decimal(0)),
        Column("gpu_hours", Quantity, nullable=False, default=Decimal(0)),
        Column("estimated", Boolean, nullable=False, default=False),
        # the EC2 instance a Kubernetes allocation ran on (from its providerID), or that a
        # node_offset row is for: bot.ingest.nodes counts the node's dollars once
        Column("node", String(200)),
        # mlcost's own row, not a source's: it moves a billed node's cost to the allocations on
        # it (bill side) or takes off allocations above the bill; recomputed on every ingestion
        Column("node_offset", Boolean, nullable=False, server_default=false()),
    ]


def _ingestion_run_id() -> Column[Any]:
    return Column(
        "run_id",
        Integer,
        ForeignKey("ingestion_runs.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    )


# One day of attributed spend for one resource, service and attribution.
daily_spend = Table(
    "daily_spend",
    metadata,
    Column("id", Integer, primary_key=True),
    _ingestion_run_id(),
    *ledger_line_columns(),
    Index("ix_daily_spend_model_day_run", "model", "day", "run"),
    Index("ix_daily_spend_coverage", "currency", "charge_category", "day"),
    Index("ix_daily_spend_day_model", "day", "model"),
    Index("ix_daily_spend_day_team", "day", "team"),
    Index("ix_daily_spend_scope", "provider", "billing_account", "day"),
)


# Ledger rows set aside: the same dollars are in the ledger from a source that counts first
# (bot.ingest.overlap); `counted_by` names the source kind whose rows count for them.
overlapping_spend = Table(
    "overlapping_spend",
    metadata,
    Column("id", Integer, primary_key=True),
    _ingestion_run_id(),
    Column("counted_by", String(40), nullable=False),
    *ledger_line_columns(),
    Index("ix_overlapping_spend_scope", "provider", "billing_account", "day"),
)


spend_rollup = Table(
    "spend_rollup",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("day", Date, nullable=False),
    Column("model", String(100)),
    Column("team", String(100)),
    Column("stage", String(20), nullable=False),
    Column("currency", String(3), nullable=False, server_default="USD"),
    Column("billed_cost", Money, nullable=False),
    Column("effective_cost", Money, nullable=False),
    Column("gpu_hours", Quantity, nullable=False),
    Index("ix_spend_rollup_day", "day"),
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
)


audit_log = Table(
    "audit_log",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("at", UTCDateTime, nullable=False, default=utcnow),
    Column("actor", String(40), nullable=False),
    Column("action", String(60), nullable=False),
    Column("target", String(250), nullable=False),
    Column("detail", JSONType, nullable=False, default=dict),
)


outbox = Table(
    "outbox",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("dedupe_key", String(300), nullable=False, unique=True),
    Column("kind", String(40), nullable=False),
    Column("channel", String(40), nullable=False),
    Column("thread_key", String(300)),
    Column("payload", JSONType, nullable=False),
    Column("status", String(20), nullable=False, default=OutboxStatus.PENDING),
    Column("attempts", Integer, nullable=False, default=0),
    Column("last_error", Text),
    Column("next_attempt_at", UTCDateTime),
    Column("created_at", UTCDateTime, nullable=False, default=utcnow),
    Column("delivered_at", UTCDateTime),
    Column("slack_ts", String(40)),
    Column("slack_channel", String(40)),
)


alert_silences = Table(
    "alert_silences",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("budget_scope", String(250), nullable=False, index=True),
    Column("period", String(20), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("until", UTCDateTime),
    Column("user_id", String(40), nullable=False),
    Column("at", UTCDateTime, nullable=False, default=utcnow),
    Column("reason", Text),
    Column("budget_revision", Integer, nullable=False, default=0, server_default="0"),
)


value_metrics = Table(
    "value_metrics",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("model_name", String(100), nullable=False, index=True),
    Column("day", Date, nullable=False),
    Column("metric", String(60), nullable=False),
    Column("units", Quantity, nullable=False),
    Column("revenue", Money),
    Column("source", String(40), nullable=False, default="manual"),
    Column("recorded_by", String(40)),
    Column("recorded_at", UTCDateTime, nullable=False, default=utcnow),
    UniqueConstraint("model_name", "day", "metric", "source", name="uq_value_metrics_key"),
)


reviews = Table(
    "reviews",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("month", String(7), nullable=False),
    Column("team_name", String(100), nullable=False),
    Column("channel", String(40), nullable=False),
    Column("parent_ts", String(40)),
    Column("status", String(20), nullable=False, default="open"),
    Column("created_at", UTCDateTime, nullable=False, default=utcnow),
    Column("closed_at", UTCDateTime),
    Column("version", Integer, nullable=False, default=0, server_default=text("0")),
    UniqueConstraint("month", "team_name", name="uq_reviews_month_team"),
)


review_items = Table(
    "review_items",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("review_id", Integer, ForeignKey("reviews.id", ondelete="CASCADE"), nullable=False),
    Column("model_name", String(100), nullable=False),
    Column("message_ts", String(40)),
    Column("snapshot", JSONType, nullable=False, default=dict),
    Column("decision", String(20)),
    Column("decided_by", String(40)),
    Column("decided_at", UTCDateTime),
    Column("reason", Text),
    Column("reminded_at", UTCDateTime),
    Column("refresh_pending", Boolean, nullable=False, default=False, server_default=false()),
    Column("refresh_error", Text),
    UniqueConstraint("review_id", "model_name", name="uq_review_items_review_model"),
)


signoffs = Table(
    "signoffs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("model_name", String(100), nullable=False),
    Column("week_start", Date, nullable=False),
    Column("user_id", String(40), nullable=False),
    Column("signed_at", UTCDateTime, nullable=False, default=utcnow),
    UniqueConstraint("model_name", "week_start", name="uq_signoffs_week"),
)


resource_findings = Table(
    "resource_findings",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("account", String(40), nullable=False),
    Column("region", String(40), nullable=False),
    Column("kind", String(40), nullable=False),
    Column("resource_id", String(1024), nullable=False),
    Column("status", String(10), nullable=False, default="open"),
    Column("first_seen", UTCDateTime, nullable=False),
    Column("last_seen", UTCDateTime, nullable=False),
    Column("monthly_cost", Money, nullable=False),
    Column("raised_monthly_cost", Money, nullable=False),
    Column("last_posted_monthly_cost", Money),
    Column("post_count", Integer, nullable=False, default=0, server_default=text("0")),
    Column("last_posted_at", UTCDateTime),
    Column("currency", String(3), nullable=False, default="USD", server_default="USD"),
    Column("model", String(100)),
    Column("team", String(100)),
    Column("channel", String(40)),
    Column("reason", String(40), nullable=False),
    Column("action", String(40), nullable=False),
    Column("target", JSONType, nullable=False, default=dict),
    Column("details", JSONType, nullable=False, default=dict),
    Column("decision", String(20), nullable=False, default="none", server_default="none"),
    Column("decided_by", String(40)),
    Column("decided_at", UTCDateTime),
    Column("keep_until", UTCDateTime),
    Column("decision_monthly_cost", Money),
    Column("closed_at", UTCDateTime),
    Column("saved_so_far", Money),
    Column("action_result", Text),
    Column("action_count", Integer, nullable=False, default=0, server_default=text("0")),
    Column("action_at", UTCDateTime),
    Column("version", Integer, nullable=False, default=0, server_default=text("0")),
    UniqueConstraint("account", "region", "kind", "resource_id", name="uq_resource_findings_key"),
    Index("ix_resource_findings_status", "status", "account"),
)


anomaly_expectations = Table(
    "anomaly_expectations",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("anomaly_key", String(300), nullable=False, unique=True),
    Column("kind", String(20), nullable=False),
    Column("scope", String(250), nullable=False),
    Column("answer", String(20), nullable=False),
    Column("month", String(7), nullable=False),
    Column("anomaly_day", Date, nullable=False),
    Column("amount", Money, nullable=False),
    Column("excess", Money, nullable=False),
    Column("dimension", String(40)),
    Column("value", String(1024)),
    Column("level", Money),
    Column("usual", Money),
    Column("currency", String(3), nullable=False, default="USD", server_default="USD"),
    Column("user_id", String(40), nullable=False),
    Column("at", UTCDateTime, nullable=False),
    Index("ix_anomaly_expectations_scope", "scope", "month"),
)
