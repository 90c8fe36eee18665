"""budget period: daily, weekly, monthly or quarterly budgets

Revision ID: 0012_budget_period
Revises: 0011_ledger_run
Create Date: 2026-12-03 19:10:00

budgets.period names the period the amount is for; every existing budget stays monthly.
alert_silences.period widens from 7 characters (`2026-11`) to 20, for the labels of other
periods (`w2026-11-23`: the week starting on that Monday).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_budget_period"
down_revision: str | None = "0011_ledger_run"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("budgets") as batch:
        batch.add_column(
            sa.Column("period", sa.String(10), nullable=False, server_default="monthly")
        )
    with op.batch_alter_table("alert_silences") as batch:
        batch.alter_column(
            "period", existing_type=sa.String(7), type_=sa.String(20), existing_nullable=False
        )


def downgrade() -> None:
    with op.batch_alter_table("alert_silences") as batch:
        batch.alter_column(
            "period", existing_type=sa.String(20), type_=sa.String(7), existing_nullable=False
        )
    with op.batch_alter_table("budgets") as batch:
        batch.drop_column("period")
