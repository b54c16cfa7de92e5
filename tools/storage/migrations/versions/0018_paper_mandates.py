"""Paper account mandates (tools/broker/mandate.py): one row per account that has one.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "paper_mandates",
        sa.Column("account", sa.String(64), primary_key=True),
        sa.Column("allow", sa.JSON, nullable=False),
        sa.Column("block", sa.JSON, nullable=False),
        sa.Column("max_orders_per_day", sa.Integer),
        sa.Column("max_exposure_fen", sa.BigInteger),
        sa.Column("max_turnover_fen", sa.BigInteger),
        sa.Column("changed_by", sa.String(64)),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("paper_mandates")
