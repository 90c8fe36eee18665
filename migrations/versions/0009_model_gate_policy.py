"""model gate policy: a model's own release-gate limits from the registry

Revision ID: 0009_model_gate_policy
Revises: 0008_resource_findings
Create Date: 2026-12-03 18:00:00

One nullable JSON column on models: the registry's optional `gate:` mapping (max_monthly,
max_unit_cost_rise_pct, allowed_instance_families). NULL: the model has no policy of its own.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009_model_gate_policy"
down_revision: str | None = "0008_resource_findings"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("models") as batch:
        batch.add_column(sa.Column("gate_policy", JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("models") as batch:
        batch.drop_column("gate_policy")
