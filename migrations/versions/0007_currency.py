"""currency: each ledger row, rollup row and budget keeps its currency

Revision ID: 0007_currency
Revises: 0006_review_decisions
Create Date: 2026-12-03 10:30:00

Rows already in the ledger were written without their billing currency, and a migration cannot
know it (the source files are not kept, and settings are not read here): they, their rollup and
every existing budget are marked USD. A ledger billed in another currency is corrected by
ingesting its sources again (each ingestion replaces its scopes), and budgets by `registry
import` with a `currency:`. An ingestion run billed in several currencies keeps its totals per
currency in `currency_totals`; its four single totals are then 0.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007_currency"
down_revision: str | None = "0006_review_decisions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
OLD_SCAN = ["model", "team", "stage", "day", "billed_cost", "effective_cost", "gpu_hours"]
NEW_SCAN = [
    "model",
    "team",
    "stage",
    "currency",
    "day",
    "billed_cost",
    "effective_cost",
    "gpu_hours",
]


def _currency() -> sa.Column:
    return sa.Column("currency", sa.String(length=3), server_default="USD", nullable=False)


def upgrade() -> None:
    with op.batch_alter_table("daily_spend", schema=None) as batch_op:
        batch_op.add_column(_currency())
    with op.batch_alter_table("spend_rollup", schema=None) as batch_op:
        batch_op.add_column(_currency())
        batch_op.drop_index("ix_spend_rollup_scan")
        batch_op.create_index("ix_spend_rollup_scan", NEW_SCAN, unique=False)
    with op.batch_alter_table("budgets", schema=None) as batch_op:
        batch_op.add_column(_currency())
    # Not in batch mode: on SQLite a batch that rebuilds ingestion_runs would drop the old table,
    # and its ON DELETE CASCADE would empty the ledger. A plain ADD COLUMN rebuilds nothing.
    op.add_column("ingestion_runs", sa.Column("currency_totals", JSON, nullable=True))


def downgrade() -> None:
    op.drop_column("ingestion_runs", "currency_totals")  # DROP COLUMN: SQLite 3.35 and later
    with op.batch_alter_table("budgets", schema=None) as batch_op:
        batch_op.drop_column("currency")
    with op.batch_alter_table("spend_rollup", schema=None) as batch_op:
        batch_op.drop_index("ix_spend_rollup_scan")
        batch_op.create_index("ix_spend_rollup_scan", OLD_SCAN, unique=False)
        batch_op.drop_column("currency")
    with op.batch_alter_table("daily_spend", schema=None) as batch_op:
        batch_op.drop_column("currency")
