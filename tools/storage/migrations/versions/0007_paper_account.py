"""Paper trading account: accounts, orders, fills, positions, cash ledger, marks, order events, trading switch.
Money is integer fen.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_id = sa.BigInteger().with_variant(sa.Integer, "sqlite")


def upgrade() -> None:
    op.create_table(
        "paper_accounts",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("starting_cash_fen", sa.BigInteger, nullable=False),
        sa.Column("cash_fen", sa.BigInteger, nullable=False),
        sa.Column("reserved_fen", sa.BigInteger, nullable=False),
        sa.Column("created_by", sa.String(64)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "paper_orders",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("client_order_id", sa.String(128), nullable=False, unique=True),
        sa.Column("account", sa.String(64), sa.ForeignKey("paper_accounts.name", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("ts_code", sa.String(16), nullable=False),
        sa.Column("name", sa.String(64)),
        sa.Column("side", sa.String(4), nullable=False),
        sa.Column("quantity", sa.BigInteger, nullable=False),
        sa.Column("price_type", sa.String(8), nullable=False),
        sa.Column("limit_price_fen", sa.BigInteger),
        sa.Column("session_date", sa.String(8), nullable=False),
        sa.Column("fill_at", sa.String(8), nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("reserved_fen", sa.BigInteger, nullable=False),
        sa.Column("thread_id", sa.String(64)),
        sa.Column("proposed_by", sa.String(64)),
        sa.Column("approved_by", sa.String(64)),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("tag", sa.String(64)),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_paper_orders_account", "paper_orders", ["account"])
    op.create_index("ix_paper_orders_status", "paper_orders", ["status"])
    op.create_table(
        "paper_fills",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("order_id", _id, sa.ForeignKey("paper_orders.id", ondelete="CASCADE"), nullable=False),
        sa.Column("account", sa.String(64), nullable=False),
        sa.Column("ts_code", sa.String(16), nullable=False),
        sa.Column("side", sa.String(4), nullable=False),
        sa.Column("quantity", sa.BigInteger, nullable=False),
        sa.Column("price_fen", sa.BigInteger, nullable=False),
        sa.Column("value_fen", sa.BigInteger, nullable=False),
        sa.Column("commission_fen", sa.BigInteger, nullable=False),
        sa.Column("stamp_duty_fen", sa.BigInteger, nullable=False),
        sa.Column("transfer_fee_fen", sa.BigInteger, nullable=False),
        sa.Column("handling_fee_fen", sa.BigInteger, nullable=False),
        sa.Column("regulator_fee_fen", sa.BigInteger, nullable=False),
        sa.Column("trade_date", sa.String(8), nullable=False),
        sa.Column("basis", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_paper_fills_order_id", "paper_fills", ["order_id"])
    op.create_index("ix_paper_fills_account_code_date", "paper_fills", ["account", "ts_code", "trade_date"])
    op.create_table(
        "paper_positions",
        sa.Column("account", sa.String(64), sa.ForeignKey("paper_accounts.name", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("ts_code", sa.String(16), primary_key=True),
        sa.Column("quantity", sa.BigInteger, nullable=False),
        sa.Column("cost_fen", sa.BigInteger, nullable=False),
        sa.Column("realised_fen", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "paper_ledger",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("account", sa.String(64), nullable=False),
        sa.Column("amount_fen", sa.BigInteger, nullable=False),
        sa.Column("balance_fen", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("order_id", _id),
        sa.Column("trade_date", sa.String(8)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_paper_ledger_account", "paper_ledger", ["account"])
    op.create_table(
        "paper_marks",
        sa.Column("account", sa.String(64), sa.ForeignKey("paper_accounts.name", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("trade_date", sa.String(8), primary_key=True),
        sa.Column("cash_fen", sa.BigInteger, nullable=False),
        sa.Column("market_value_fen", sa.BigInteger, nullable=False),
        sa.Column("equity_fen", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "order_events",
        sa.Column("id", _id, primary_key=True, autoincrement=True),
        sa.Column("client_order_id", sa.String(128)),
        sa.Column("account", sa.String(64)),
        sa.Column("event", sa.String(16), nullable=False),
        sa.Column("actor", sa.String(64)),
        sa.Column("detail", sa.JSON, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_order_events_client_order_id", "order_events", ["client_order_id"])
    op.create_table(
        "trading_switch",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("changed_by", sa.String(64)),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    for table in ("trading_switch", "order_events", "paper_marks", "paper_ledger", "paper_positions",
                  "paper_fills", "paper_orders", "paper_accounts"):
        op.drop_table(table)
