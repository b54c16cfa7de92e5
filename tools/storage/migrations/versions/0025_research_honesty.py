"""Research honesty (issue 42): every evaluated variant a trial (with its compact return series), the team library
(a factor in it passed the gate, or was saved anyway with a reason), and the decay monitor's state per factor.

Revision ID: 0025
Revises: 0024
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    op.create_table(
        "research_trials",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("key", sa.String(200), nullable=False, unique=True),
        sa.Column("thread_id", sa.String(128), nullable=False),
        sa.Column("person", sa.String(64)),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("universe", sa.String(64), nullable=False),
        sa.Column("start", sa.String(8), nullable=False),
        sa.Column("end", sa.String(8), nullable=False),
        sa.Column("sharpe", sa.Double),
        sa.Column("observations", sa.Integer),
        sa.Column("skew", sa.Double),
        sa.Column("kurtosis", sa.Double),
        sa.Column("dates", sa.LargeBinary),
        sa.Column("returns", sa.LargeBinary),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_research_trials_thread_id", "research_trials", ["thread_id"])
    op.create_index("ix_research_trials_person", "research_trials", ["person"])
    op.create_table(
        "factor_library",
        sa.Column("factor_id", _id, sa.ForeignKey("factors.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("added_by", sa.String(64)),
        sa.Column("how", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text),
        sa.Column("gate", sa.JSON, nullable=False),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "factor_decay",
        sa.Column("factor_id", _id, sa.ForeignKey("factors.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("since", sa.String(8), nullable=False),
        sa.Column("checked", sa.String(8), nullable=False),
        sa.Column("pending", sa.String(16)),
        sa.Column("pending_count", sa.Integer, nullable=False),
        sa.Column("figures", sa.JSON, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("factor_decay")
    op.drop_table("factor_library")
    op.drop_index("ix_research_trials_person", "research_trials")
    op.drop_index("ix_research_trials_thread_id", "research_trials")
    op.drop_table("research_trials")
