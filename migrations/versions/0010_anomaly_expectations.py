"""anomaly expectations: owners' Expected / Not expected answers to anomaly posts

Revision ID: 0010_anomaly_expectations
Revises: 0009_model_gate_policy
Create Date: 2026-12-03 19:00:00

One row per answered anomaly post (its outbox key, unique): the answer, who and when, the
anomaly's day and amount, and for Expected the driver accepted (a daily_spend dimension and
value) with its spend that day and its usual day. A new table: nothing existing is touched.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_anomaly_expectations"
down_revision: str | None = "0009_model_gate_policy"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _money() -> sa.types.TypeEngine:
    # bot.db.schema.Money: NUMERIC(24, 10) on PostgreSQL, a scaled BIGINT on SQLite
    return sa.Numeric(precision=24, scale=10).with_variant(sa.BigInteger(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "anomaly_expectations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("anomaly_key", sa.String(length=300), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("scope", sa.String(length=250), nullable=False),
        sa.Column("answer", sa.String(length=20), nullable=False),
        sa.Column("month", sa.String(length=7), nullable=False),
        sa.Column("anomaly_day", sa.Date(), nullable=False),
        sa.Column("amount", _money(), nullable=False),
        sa.Column("excess", _money(), nullable=False),
        sa.Column("dimension", sa.String(length=40), nullable=True),
        sa.Column("value", sa.String(length=1024), nullable=True),
        sa.Column("level", _money(), nullable=True),
        sa.Column("usual", _money(), nullable=True),
        sa.Column("currency", sa.String(length=3), server_default="USD", nullable=False),
        sa.Column("user_id", sa.String(length=40), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_anomaly_expectations")),
        sa.UniqueConstraint("anomaly_key", name=op.f("uq_anomaly_expectations_anomaly_key")),
    )
    with op.batch_alter_table("anomaly_expectations", schema=None) as batch_op:
        batch_op.create_index("ix_anomaly_expectations_scope", ["scope", "month"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("anomaly_expectations", schema=None) as batch_op:
        batch_op.drop_index("ix_anomaly_expectations_scope")
    op.drop_table("anomaly_expectations")
