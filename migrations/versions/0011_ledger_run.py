"""ledger run: the training run a charge belongs to, a dimension of daily_spend

Revision ID: 0011_ledger_run
Revises: 0010_anomaly_expectations
Create Date: 2026-12-03 19:00:00

One nullable column on daily_spend: the run (the `ml:run` tag, a registry-declared run tag key,
or a SageMaker training job's name from its ARN). NULL: the charge belongs to no run; rows
ingested before this migration have none until their billing is ingested again. An index on
(model, day, run) serves the per-model run queries (a model's month of runs, the run behind an
anomaly). Adding a nullable column rewrites nothing, on SQLite or PostgreSQL.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_ledger_run"
down_revision: str | None = "0010_anomaly_expectations"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("daily_spend") as batch:
        batch.add_column(sa.Column("run", sa.String(length=256), nullable=True))
    op.create_index("ix_daily_spend_model_day_run", "daily_spend", ["model", "day", "run"])


def downgrade() -> None:
    op.drop_index("ix_daily_spend_model_day_run", table_name="daily_spend")
    with op.batch_alter_table("daily_spend") as batch:
        batch.drop_column("run")
