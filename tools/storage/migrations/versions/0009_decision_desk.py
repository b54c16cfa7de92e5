"""Trading decision desk: analysts' reports and memory summaries (seed 001's Memory Controller), per namespace, and
the decision log with each decision's resolved outcome. Decimals are stored as exact text.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_decimal = sa.String(40)


def upgrade() -> None:
    op.create_table(
        "analyst_reports",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("namespace", sa.String(128), nullable=False),
        sa.Column("analyst", sa.String(16), nullable=False),
        sa.Column("symbol", sa.String(32), nullable=False),
        sa.Column("trade_date", sa.String(8), nullable=False),
        sa.Column("session", sa.String(16), nullable=False),
        sa.Column("report", sa.Text, nullable=False),
        sa.Column("written_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("namespace", "analyst", "symbol", "trade_date", "session",
                            name="uq_analyst_reports_key"),
    )
    op.create_table(
        "analyst_summaries",
        sa.Column("namespace", sa.String(128), primary_key=True),
        sa.Column("analyst", sa.String(16), primary_key=True),
        sa.Column("symbol", sa.String(32), primary_key=True),
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("as_of_date", sa.String(8), primary_key=True),
        sa.Column("as_of_session", sa.String(16), nullable=False),
        sa.Column("through_date", sa.String(8), nullable=False),
        sa.Column("method", sa.String(16), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "desk_decisions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("namespace", sa.String(128), nullable=False),
        sa.Column("ts_code", sa.String(32), nullable=False),
        sa.Column("trade_date", sa.String(8), nullable=False),
        sa.Column("as_of", sa.DateTime(timezone=True), nullable=False),
        sa.Column("rating", sa.String(16), nullable=False),
        sa.Column("target_position", _decimal, nullable=False),
        sa.Column("confidence", sa.Double, nullable=False),
        sa.Column("price", _decimal, nullable=False),
        sa.Column("report_ids", sa.JSON, nullable=False),
        sa.Column("universe", sa.JSON, nullable=False),
        sa.Column("thread_id", sa.String(64), nullable=False),
        sa.Column("summary", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_desk_decisions_namespace_code_date", "desk_decisions", ["namespace", "ts_code", "trade_date"])
    op.create_table(
        "desk_decision_outcomes",
        sa.Column("decision_id", sa.String(64), sa.ForeignKey("desk_decisions.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("horizon", sa.Integer, primary_key=True),
        sa.Column("exit_date", sa.String(8), nullable=False),
        sa.Column("entry_close", _decimal, nullable=False),
        sa.Column("exit_close", _decimal, nullable=False),
        sa.Column("realised_return", _decimal, nullable=False),
        sa.Column("benchmark_return", _decimal),
        sa.Column("excess_return", _decimal),
        sa.Column("benchmark_codes", sa.Integer, nullable=False),
        sa.Column("universe_size", sa.Integer, nullable=False),
        sa.Column("hit", sa.Boolean),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("desk_decision_outcomes")
    op.drop_index("ix_desk_decisions_namespace_code_date", table_name="desk_decisions")
    op.drop_table("desk_decisions")
    op.drop_table("analyst_summaries")
    op.drop_table("analyst_reports")
