"""The simulated clock: the paper accounts' session date on static data (one row; its moves are in order_events).

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "simulated_clock",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("session_date", sa.String(8), nullable=False),
        sa.Column("data_end", sa.String(8), nullable=False),
        sa.Column("moved_by", sa.String(64)),
        sa.Column("moved_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("simulated_clock")
