"""Factor library: factors (versions, review), factor values, factor metrics.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    op.create_table(
        "factors",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("code", sa.Text, nullable=False),
        sa.Column("spec", sa.JSON, nullable=False),
        sa.Column("author", sa.String(64)),
        sa.Column("reviewer", sa.String(64)),
        sa.Column("decision", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("run_key", sa.String(128), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("name", "version", name="uq_factors_name_version"),
    )
    op.create_index("ix_factors_name", "factors", ["name"])
    op.create_table(
        "factor_values",
        sa.Column("factor_id", _id, sa.ForeignKey("factors.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("trade_date", sa.String(8), primary_key=True),
        sa.Column("ts_code", sa.String(16), primary_key=True),
        sa.Column("value", sa.Double, nullable=False),
    )
    op.create_table(
        "factor_metrics",
        sa.Column("factor_id", _id, sa.ForeignKey("factors.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("period", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(32), primary_key=True),
        sa.Column("value", sa.Double),
    )


def downgrade() -> None:
    op.drop_table("factor_metrics")
    op.drop_table("factor_values")
    op.drop_index("ix_factors_name", table_name="factors")
    op.drop_table("factors")
