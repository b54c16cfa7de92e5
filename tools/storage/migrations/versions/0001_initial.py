"""Thread registry, processed events, audit log, workspace frames.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    op.create_table(
        "threads",
        sa.Column("thread_id", sa.String(64), primary_key=True),
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("channel_id", sa.String(32), nullable=False),
        sa.Column("thread_ts", sa.String(32), nullable=False),
        sa.Column("workflow", sa.String(32)),
        sa.Column("user_id", sa.String(32)),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("pending", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("team_id", "channel_id", "thread_ts", name="uq_threads_slack_key"),
    )
    op.create_table(
        "processed_events",
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "audit_log",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("thread_id", sa.String(64), nullable=False),
        sa.Column("interrupt_id", sa.String(64)),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("detail", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_audit_log_thread_id", "audit_log", ["thread_id"])
    op.create_table(
        "workspace_frames",
        sa.Column("thread_id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("n_rows", sa.Integer, nullable=False),
        sa.Column("n_cols", sa.Integer, nullable=False),
        sa.Column("first_date", sa.String(10)),
        sa.Column("last_date", sa.String(10)),
        sa.Column("data", sa.LargeBinary, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("workspace_frames")
    op.drop_index("ix_audit_log_thread_id", table_name="audit_log")
    op.drop_table("audit_log")
    op.drop_table("processed_events")
    op.drop_table("threads")
