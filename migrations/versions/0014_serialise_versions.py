"""row versions for budgets and resource findings

Revision ID: 0014_serialise_versions
Revises: 0013_amounts_budget_scale
Create Date: 2026-12-04 10:00:00

budgets.version and resource_findings.version are bumped by every change made from Slack (a
budget set, Raise, Keep, Not waste, Stop it), under the row's lock, so concurrent changes are
recorded one after the other and each audit record's `before` is the value it replaced.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_serialise_versions"
down_revision: str | None = "0013_amounts_budget_scale"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("budgets", "resource_findings")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(
                sa.Column("version", sa.Integer(), nullable=False, server_default=sa.text("0"))
            )


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("version")
