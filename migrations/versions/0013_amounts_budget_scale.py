"""budget amounts: 4 decimal places, so a budget up to one trillion fits on SQLite

Revision ID: 0013_amounts_budget_scale
Revises: 0012_budget_period
Create Date: 2026-12-04 17:20:00

budgets.monthly_amount was stored like a ledger cost (10 decimal places): on SQLite, a BIGINT of
the amount times 10^10, which overflows above $922M. A budget has at most 4 decimal places (the
registry and `/mlcost budget set` allow no more), so it is now NUMERIC(24, 4) on PostgreSQL and
the amount times 10^4 on SQLite: up to $1,000,000,000,000 fits either way.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_amounts_budget_scale"
down_revision: str | None = "0012_budget_period"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RESCALE = 10**6  # from 10 decimal places to 4


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # the column stays a BIGINT of scaled units; rounding half up (amounts are positive)
        op.execute(
            f"UPDATE budgets SET monthly_amount = (monthly_amount + {RESCALE // 2}) / {RESCALE}"
        )
        return
    with op.batch_alter_table("budgets") as batch:
        batch.alter_column(
            "monthly_amount",
            existing_type=sa.Numeric(24, 10),
            type_=sa.Numeric(24, 4),
            existing_nullable=False,
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # budgets above $922M cannot go back to 10 places: the downgrade stops on them
        op.execute(f"UPDATE budgets SET monthly_amount = monthly_amount * {RESCALE}")
        return
    with op.batch_alter_table("budgets") as batch:
        batch.alter_column(
            "monthly_amount",
            existing_type=sa.Numeric(24, 4),
            type_=sa.Numeric(24, 10),
            existing_nullable=False,
        )
