"""budgets count changes of their amount; silences remember the amount they were given for;
poll sources whose last fetch failed are recorded for /healthz

Revision ID: 0005_budget_revisions
Revises: 0004_spend_rollup
Create Date: 2026-12-03 10:40:00

A budget alert's key names the budget's amount revision once the amount has changed, so a raised
(or lowered) budget gets fresh thresholds for the month; revision 0 keeps the keys of before.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_budget_revisions"
down_revision: str | None = "0004_spend_rollup"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "source_failures",
        sa.Column("source", sa.String(length=300), nullable=False),
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("error", sa.String(length=100), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("source", name=op.f("pk_source_failures")),
    )
    with op.batch_alter_table("budgets", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("amount_revision", sa.Integer(), server_default="0", nullable=False)
        )
    with op.batch_alter_table("alert_silences", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("budget_revision", sa.Integer(), server_default="0", nullable=False)
        )


def downgrade() -> None:
    op.drop_table("source_failures")
    with op.batch_alter_table("alert_silences", schema=None) as batch_op:
        batch_op.drop_column("budget_revision")
    with op.batch_alter_table("budgets", schema=None) as batch_op:
        batch_op.drop_column("amount_revision")
