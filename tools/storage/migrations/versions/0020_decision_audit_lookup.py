"""Indexes for the look-up an apply makes before it resumes a decision (issue 38): the decision's audit entry by
its interrupt id, and that row's chain entry by its table and id.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_audit_log_interrupt_id", "audit_log", ["interrupt_id"])
    op.create_index("ix_audit_chain_source", "audit_chain", ["source", "source_id"])


def downgrade() -> None:
    op.drop_index("ix_audit_chain_source", "audit_chain")
    op.drop_index("ix_audit_log_interrupt_id", "audit_log")
