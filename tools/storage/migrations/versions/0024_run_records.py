"""Run records (issue 41): each run's manifest, its model calls and the rows it read.

Revision ID: 0024
Revises: 0022
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0022"
branch_labels = None
depends_on = None

ID = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("thread_id", sa.String(64), nullable=False, index=True),
        sa.Column("user_id", sa.String(64), nullable=True, index=True),
        sa.Column("account", sa.String(64), nullable=False, index=True),
        sa.Column("workflow", sa.String(32), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False, index=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("manifest", sa.Text(), nullable=False),
        sa.Column("manifest_hash", sa.String(64), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "run_calls",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(32), nullable=False, index=True),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(100), nullable=False),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("day", sa.String(10), nullable=False, index=True),
        sa.Column("user_id", sa.String(64), nullable=True),
        sa.Column("account", sa.String(64), nullable=False),
        sa.Column("workflow", sa.String(32), nullable=True),
    )
    op.create_table(
        "run_reads",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(32), nullable=False, index=True),
        sa.Column("dataset", sa.String(32), nullable=False),
        sa.Column("codes", sa.Text(), nullable=False),
        sa.Column("start", sa.String(8), nullable=False),
        sa.Column("end", sa.String(8), nullable=False),
        sa.Column("fields", sa.Text(), nullable=False),
        sa.Column("rows_hash", sa.String(64), nullable=False),
        sa.Column("rows", sa.LargeBinary(), nullable=False),
    )
    op.create_table(
        "budget_raises",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.Column("raised_by", sa.String(64), nullable=False),
        sa.Column("raised_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("budget_raises")
    op.drop_table("run_reads")
    op.drop_table("run_calls")
    op.drop_table("runs")
