"""allocation nodes: the EC2 instance under a Kubernetes allocation, and node offset rows

Revision ID: 0016_nodes_allocation_node
Revises: 0015_overlap_spend
Create Date: 2026-12-05 12:00:00

`node` keeps the EC2 instance an OpenCost allocation ran on (from its providerID);
`node_offset` marks the rows mlcost writes so that a node billed by the bill and allocated by
OpenCost is counted once (bot.ingest.nodes). Both tables of ledger rows get them, so rows move
between daily_spend and overlapping_spend whole. Existing rows have no node until their days are
ingested again.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_nodes_allocation_node"
down_revision: str | None = "0015_overlap_spend"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("daily_spend", "overlapping_spend")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("node", sa.String(length=200), nullable=True))
            batch.add_column(
                sa.Column("node_offset", sa.Boolean(), server_default=sa.false(), nullable=False)
            )


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("node_offset")
            batch.drop_column("node")
