"""covering index for budget and anomaly evaluation

Revision ID: 0002_alerts
Revises: 0001
Create Date: 2026-12-02 15:20:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0002_alerts"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ["model", "team", "stage", "day", "billed_cost", "effective_cost", "gpu_hours"]


def upgrade() -> None:
    # Budget evaluation groups the ledger window by (model, team, stage): with this order the
    # grouping streams from the index without touching the table or sorting.
    with op.batch_alter_table("daily_spend", schema=None) as batch_op:
        batch_op.create_index("ix_daily_spend_rollup", COLUMNS, unique=False)


def downgrade() -> None:
    with op.batch_alter_table("daily_spend", schema=None) as batch_op:
        batch_op.drop_index("ix_daily_spend_rollup")
