"""The rule gate (issue 42, item 4): a rule's latest backtest verdict, and the schedules set over the gate with a
reason (who, when, why), kept while the rule lives.

Revision ID: 0027
Revises: 0026
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    op.add_column("saved_rules", sa.Column("verdict", sa.JSON))
    op.create_table(
        "rule_overrides",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("rule_id", _id, sa.ForeignKey("saved_rules.id", ondelete="CASCADE"), nullable=False),
        sa.Column("by", sa.String(64), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("schedule", sa.String(120), nullable=False),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("verdict", sa.JSON),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_rule_overrides_rule_id", "rule_overrides", ["rule_id"])


def downgrade() -> None:
    op.drop_index("ix_rule_overrides_rule_id", "rule_overrides")
    op.drop_table("rule_overrides")
    op.drop_column("saved_rules", "verdict")
