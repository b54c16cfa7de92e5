"""Re-run outcomes (issue 41): each `rerun ID [live]` of a run, whether it came out the same and, for a desk
decision, its rating; several live re-runs of one decision give its stability.

Revision ID: 0026
Revises: 0025
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    op.create_table(
        "run_reruns",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(32), nullable=False, index=True),
        sa.Column("live", sa.Boolean(), nullable=False),
        sa.Column("same", sa.Boolean(), nullable=False),
        sa.Column("rating", sa.String(32), nullable=True),
        sa.Column("by", sa.String(64), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("run_reruns")
