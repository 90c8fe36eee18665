"""resource findings: what the resource scan found, followed across scans and decided in Slack

Revision ID: 0008_resource_findings
Revises: 0007_currency
Create Date: 2026-12-03 17:00:00

One row per (account, region, kind, resource id): when it was first and last seen, the monthly
cost when raised and when last posted, how many times it was posted, the owner's decision (Keep
for 7 days, Not waste, Stop it) with the cost at decision, and, once the resource is gone, when
it closed and what it had saved by then. A new table: nothing existing is touched.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0008_resource_findings"
down_revision: str | None = "0007_currency"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _money() -> sa.types.TypeEngine:
    # bot.db.schema.Money: NUMERIC(24, 10) on PostgreSQL, a scaled BIGINT on SQLite
    return sa.Numeric(precision=24, scale=10).with_variant(sa.BigInteger(), "sqlite")


def _when() -> sa.types.TypeEngine:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "resource_findings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("account", sa.String(length=40), nullable=False),
        sa.Column("region", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("resource_id", sa.String(length=1024), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("first_seen", _when(), nullable=False),
        sa.Column("last_seen", _when(), nullable=False),
        sa.Column("monthly_cost", _money(), nullable=False),
        sa.Column("raised_monthly_cost", _money(), nullable=False),
        sa.Column("last_posted_monthly_cost", _money(), nullable=True),
        sa.Column("post_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("last_posted_at", _when(), nullable=True),
        sa.Column("currency", sa.String(length=3), server_default="USD", nullable=False),
        sa.Column("model", sa.String(length=100), nullable=True),
        sa.Column("team", sa.String(length=100), nullable=True),
        sa.Column("channel", sa.String(length=40), nullable=True),
        sa.Column("reason", sa.String(length=40), nullable=False),
        sa.Column("action", sa.String(length=40), nullable=False),
        sa.Column("target", JSON, nullable=False),
        sa.Column("details", JSON, nullable=False),
        sa.Column("decision", sa.String(length=20), server_default="none", nullable=False),
        sa.Column("decided_by", sa.String(length=40), nullable=True),
        sa.Column("decided_at", _when(), nullable=True),
        sa.Column("keep_until", _when(), nullable=True),
        sa.Column("decision_monthly_cost", _money(), nullable=True),
        sa.Column("closed_at", _when(), nullable=True),
        sa.Column("saved_so_far", _money(), nullable=True),
        sa.Column("action_result", sa.Text(), nullable=True),
        sa.Column("action_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("action_at", _when(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_resource_findings")),
        sa.UniqueConstraint(
            "account", "region", "kind", "resource_id", name="uq_resource_findings_key"
        ),
    )
    with op.batch_alter_table("resource_findings", schema=None) as batch_op:
        batch_op.create_index("ix_resource_findings_status", ["status", "account"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("resource_findings", schema=None) as batch_op:
        batch_op.drop_index("ix_resource_findings_status")
    op.drop_table("resource_findings")
