"""Execution rules: saved rules, their execution logs (the seed's table, (execution_id, step) unique) and the
schedule ticks workers claim.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    op.create_table(
        "saved_rules",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("symbol", sa.String(32), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("requirements", sa.Text, nullable=False),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("channel", sa.String(64), nullable=False),
        sa.Column("runtime_status", sa.JSON, nullable=False),
        sa.Column("schedule", sa.String(120)),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("scheduled_since", sa.DateTime(timezone=True)),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("size", sa.BigInteger),
        sa.Column("value_fen", sa.BigInteger),
        sa.Column("threshold", sa.Double, nullable=False),
        sa.Column("account", sa.String(64)),
        sa.Column("consecutive_failures", sa.Integer, nullable=False),
        sa.Column("paused_reason", sa.Text),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_saved_rules_owner", "saved_rules", ["owner"])
    op.create_index("ix_saved_rules_channel", "saved_rules", ["channel"])
    op.create_table(
        "execution_logs",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("rule_id", _id, sa.ForeignKey("saved_rules.id", ondelete="CASCADE"), nullable=False),
        sa.Column("symbol", sa.String(32), nullable=False),
        sa.Column("execution_id", sa.String(64), nullable=False),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("action_type", sa.String(32), nullable=False),
        sa.Column("action_data", sa.JSON, nullable=False),
        sa.Column("result_data", sa.JSON),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("CURRENT_TIMESTAMP")),
        sa.UniqueConstraint("execution_id", "step", name="uq_execution_logs_execution_step"),
    )
    op.create_index("ix_execution_logs_rule_id", "execution_logs", ["rule_id"])
    op.create_table(
        "rule_ticks",
        sa.Column("rule_id", _id, sa.ForeignKey("saved_rules.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("tick", sa.DateTime(timezone=True), primary_key=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_by", sa.String(64), nullable=False),
        sa.Column("execution_id", sa.String(64)),
        sa.Column("status", sa.String(16), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("rule_ticks")
    op.drop_index("ix_execution_logs_rule_id", table_name="execution_logs")
    op.drop_table("execution_logs")
    op.drop_index("ix_saved_rules_channel", table_name="saved_rules")
    op.drop_index("ix_saved_rules_owner", table_name="saved_rules")
    op.drop_table("saved_rules")
