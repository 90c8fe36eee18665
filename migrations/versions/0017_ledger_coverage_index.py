"""ledger coverage index: which days and currencies the ledger holds, without reading it all

Revision ID: 0017_ledger_coverage_index
Revises: 0016_nodes_allocation_node
Create Date: 2026-12-05 12:00:00

Covered days (the days with usage billed in a currency) and the ledger's currencies were read by
scanning every ledger row of the window, or of the whole ledger: 1.2 s for 51 days and 1.3 s for
the ledger's currencies over 5.6M rows (benchmarks/scale.py). With (currency, charge_category,
day) each covered day, and each currency, is one index probe: 2-3 ms and 1-5 ms.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0017_ledger_coverage_index"
down_revision: str | None = "0016_nodes_allocation_node"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_daily_spend_coverage", "daily_spend", ["currency", "charge_category", "day"]
    )


def downgrade() -> None:
    op.drop_index("ix_daily_spend_coverage", table_name="daily_spend")
