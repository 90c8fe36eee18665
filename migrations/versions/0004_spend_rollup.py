"""spend_rollup: the ledger summed by (day, model, team, stage) for budget evaluation

Revision ID: 0004_spend_rollup
Revises: 0003_review_refresh
Create Date: 2026-12-02 18:30:00

Budget evaluation used to scan the ledger through a covering index on daily_spend. It now reads
this rollup (one row per day, model, team and stage instead of one per resource and service),
which the ledger keeps in step at each ingestion; the covering index on daily_spend goes.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_spend_rollup"
down_revision: str | None = "0003_review_refresh"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MONEY = sa.Numeric(precision=24, scale=10).with_variant(sa.BigInteger(), "sqlite")
QUANTITY = sa.Numeric(precision=28, scale=6).with_variant(sa.BigInteger(), "sqlite")
SCAN = ["model", "team", "stage", "day", "billed_cost", "effective_cost", "gpu_hours"]


def upgrade() -> None:
    op.create_table(
        "spend_rollup",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("model", sa.String(length=100), nullable=True),
        sa.Column("team", sa.String(length=100), nullable=True),
        sa.Column("stage", sa.String(length=20), nullable=False),
        sa.Column("billed_cost", MONEY, nullable=False),
        sa.Column("effective_cost", MONEY, nullable=False),
        sa.Column("gpu_hours", QUANTITY, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_spend_rollup")),
    )
    # what is already in the ledger (scaled integers on SQLite, NUMERIC on PostgreSQL: exact)
    op.execute(
        "INSERT INTO spend_rollup (day, model, team, stage, billed_cost, effective_cost, gpu_hours)"
        " SELECT day, model, team, stage, SUM(billed_cost), SUM(effective_cost), SUM(gpu_hours)"
        " FROM daily_spend GROUP BY day, model, team, stage"
    )
    with op.batch_alter_table("spend_rollup", schema=None) as batch_op:
        batch_op.create_index("ix_spend_rollup_scan", SCAN, unique=False)
        batch_op.create_index("ix_spend_rollup_day", ["day"], unique=False)
    with op.batch_alter_table("daily_spend", schema=None) as batch_op:
        batch_op.drop_index("ix_daily_spend_rollup")


def downgrade() -> None:
    with op.batch_alter_table("daily_spend", schema=None) as batch_op:
        batch_op.create_index("ix_daily_spend_rollup", SCAN, unique=False)
    op.drop_table("spend_rollup")
