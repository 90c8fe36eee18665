"""reviews count their decisions (compare-and-set); review items keep a refresh Slack refused

Revision ID: 0006_review_decisions
Revises: 0005_budget_revisions
Create Date: 2026-12-03 10:30:00

Every decision in a review bumps reviews.version under the review's row lock; a decision whose
read of the review is stale retries, and a thread refresh that rendered an older version renders
again, so the last update Slack receives shows every committed decision. A review item whose
thread refresh Slack refuses for good (msg_too_long, channel_not_found, ...) keeps the error in
review_items.refresh_error and is not retried.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_review_decisions"
down_revision: str | None = "0005_budget_revisions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("reviews", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("version", sa.Integer(), server_default=sa.text("0"), nullable=False)
        )
    with op.batch_alter_table("review_items", schema=None) as batch_op:
        batch_op.add_column(sa.Column("refresh_error", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("review_items", schema=None) as batch_op:
        batch_op.drop_column("refresh_error")
    with op.batch_alter_table("reviews", schema=None) as batch_op:
        batch_op.drop_column("version")
