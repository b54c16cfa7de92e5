"""Execution rules: the per-rule order proposal claim (which execution's proposal waits for a trader, and when the
claim lapses), so two runs of one rule never put up two order cards at once.

Plain ADD/DROP COLUMN, not a batch copy: on SQLite a batch recreates saved_rules, and dropping it with foreign
keys on would cascade into execution_logs and rule_ticks.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("saved_rules", sa.Column("proposal_execution", sa.String(64)))
    op.add_column("saved_rules", sa.Column("proposal_expires_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    op.drop_column("saved_rules", "proposal_expires_at")
    op.drop_column("saved_rules", "proposal_execution")
