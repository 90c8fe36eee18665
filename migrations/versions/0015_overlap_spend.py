"""overlapping spend: the same dollars from a second source kind, set aside

Revision ID: 0015_overlap_spend
Revises: 0014_serialise_versions
Create Date: 2026-12-05 10:00:00

`overlapping_spend` holds ledger rows set aside because a source earlier in the priority (the
bill: CUR, Athena, FOCUS, then Cost Explorer, then OpenCost's cloud costs) holds the same
provider account's day; it has daily_spend's columns plus `counted_by`, the kind that counts
them. Nothing sums it. `ingestion_runs.overlaps` records what each ingestion found. Existing
rows stay where they are until their days are ingested again.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0015_overlap_spend"
down_revision: str | None = "0014_serialise_versions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _money(precision: int, scale: int) -> sa.types.TypeEngine[object]:
    return sa.Numeric(precision=precision, scale=scale).with_variant(sa.BigInteger(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "overlapping_spend",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("counted_by", sa.String(length=40), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("billing_period", sa.Date(), nullable=False),
        sa.Column("provider", sa.String(length=60), nullable=False),
        sa.Column("billing_account", sa.String(length=200), nullable=False),
        sa.Column("sub_account", sa.String(length=200), nullable=True),
        sa.Column("service", sa.String(length=200), nullable=False),
        sa.Column("service_category", sa.String(length=100), nullable=True),
        sa.Column("usage_type", sa.String(length=200), nullable=True),
        sa.Column("region", sa.String(length=60), nullable=True),
        sa.Column("resource_id", sa.String(length=1024), nullable=True),
        sa.Column("instance_type", sa.String(length=60), nullable=True),
        sa.Column("charge_category", sa.String(length=30), nullable=False),
        sa.Column("currency", sa.String(length=3), server_default="USD", nullable=False),
        sa.Column("model", sa.String(length=100), nullable=True),
        sa.Column("stage", sa.String(length=20), nullable=False),
        sa.Column("team", sa.String(length=100), nullable=True),
        sa.Column("model_tag_value", sa.String(length=256), nullable=True),
        sa.Column("attribution", sa.String(length=40), nullable=False),
        sa.Column("run", sa.String(length=256), nullable=True),
        sa.Column("billed_cost", _money(24, 10), nullable=False),
        sa.Column("effective_cost", _money(24, 10), nullable=False),
        sa.Column("usage_quantity", _money(28, 6), nullable=False),
        sa.Column("gpu_hours", _money(28, 6), nullable=False),
        sa.Column("estimated", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["ingestion_runs.id"],
            name=op.f("fk_overlapping_spend_run_id_ingestion_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_overlapping_spend")),
    )
    with op.batch_alter_table("overlapping_spend") as batch:
        batch.create_index(batch.f("ix_overlapping_spend_run_id"), ["run_id"], unique=False)
        batch.create_index(
            "ix_overlapping_spend_scope", ["provider", "billing_account", "day"], unique=False
        )
    with op.batch_alter_table("ingestion_runs") as batch:
        batch.add_column(sa.Column("overlaps", JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ingestion_runs") as batch:
        batch.drop_column("overlaps")
    op.drop_index("ix_overlapping_spend_scope", table_name="overlapping_spend")
    op.drop_index("ix_overlapping_spend_run_id", table_name="overlapping_spend")
    op.drop_table("overlapping_spend")
