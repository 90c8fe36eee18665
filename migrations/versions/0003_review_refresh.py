"""review items remember a Slack refresh that has not happened yet

Revision ID: 0003_review_refresh
Revises: 0002_alerts
Create Date: 2026-12-02 18:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_review_refresh"
down_revision: str | None = "0002_alerts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A decision is recorded before its message is updated in Slack; if that update fails, the
    # flag stays set and the delivery job updates the message later.
    with op.batch_alter_table("review_items", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("refresh_pending", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("review_items", schema=None) as batch_op:
        batch_op.drop_column("refresh_pending")
