"""Durable decisions and posts: a human decision is a row before anything resumes; a question or result is a
row until Slack accepted its message. processed_events goes: messages are deduped by the job queue's inbox
(0006), which records a message and its run in one step.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "decisions",
        sa.Column("interrupt_id", sa.String(64), primary_key=True),
        sa.Column("thread_id", sa.String(64), nullable=False),
        sa.Column("decision", sa.JSON, nullable=False),
        sa.Column("decided_by", sa.String(64)),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True)),
        sa.Column("outcome", sa.String(16)),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("last_error", sa.Text),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_by", sa.String(64)),
        sa.Column("claimed_until", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_decisions_thread_id", "decisions", ["thread_id"])
    op.create_table(
        "posts",
        sa.Column("key", sa.String(128), primary_key=True),
        sa.Column("thread_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("body", sa.JSON, nullable=False),
        sa.Column("ts", sa.String(32)),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("last_error", sa.Text),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("posted_at", sa.DateTime(timezone=True)),
        sa.Column("completed_at", sa.DateTime(timezone=True)),
        sa.Column("claimed_by", sa.String(64)),
        sa.Column("claimed_until", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_posts_thread_id", "posts", ["thread_id"])
    op.drop_table("processed_events")


def downgrade() -> None:
    op.create_table(
        "processed_events",
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.drop_index("ix_posts_thread_id", table_name="posts")
    op.drop_table("posts")
    op.drop_index("ix_decisions_thread_id", table_name="decisions")
    op.drop_table("decisions")
