"""Paper account tables (see ARCHITECTURE.md): accounts, orders, fills, positions, the cash ledger, daily marks,
order events (the audit trail), the trading switch and the simulated clock. Money is integer fen. Migrations 0007
and 0014 create them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tools.storage.models import Base, utcnow

_id = BigInteger().with_variant(Integer, "sqlite")


class PaperAccount(Base):
    """One paper account: cash in fen, and the part of it held back for open buy orders."""

    __tablename__ = "paper_accounts"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    starting_cash_fen: Mapped[int] = mapped_column(BigInteger)
    cash_fen: Mapped[int] = mapped_column(BigInteger)
    reserved_fen: Mapped[int] = mapped_column(BigInteger, default=0)
    created_by: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class PaperOrder(Base):
    """An approved order: open until its session's bar fills it (or it is cancelled or expires)."""

    __tablename__ = "paper_orders"

    id: Mapped[int] = mapped_column(_id, primary_key=True, autoincrement=True)
    client_order_id: Mapped[str] = mapped_column(String(128), unique=True)
    account: Mapped[str] = mapped_column(String(64), ForeignKey("paper_accounts.name", ondelete="CASCADE"),
                                         index=True)
    ts_code: Mapped[str] = mapped_column(String(16))
    name: Mapped[str | None] = mapped_column(String(64))
    side: Mapped[str] = mapped_column(String(4))  # buy, sell
    quantity: Mapped[int] = mapped_column(BigInteger)
    price_type: Mapped[str] = mapped_column(String(8))  # market, limit
    limit_price_fen: Mapped[int | None] = mapped_column(BigInteger)
    session_date: Mapped[str] = mapped_column(String(8))  # YYYYMMDD: the session it fills in
    fill_at: Mapped[str] = mapped_column(String(8))  # open, close
    status: Mapped[str] = mapped_column(String(12), index=True)  # open, filled, cancelled, expired
    reserved_fen: Mapped[int] = mapped_column(BigInteger, default=0)  # cash held back (buys)
    thread_id: Mapped[str | None] = mapped_column(String(64))
    proposed_by: Mapped[str | None] = mapped_column(String(64))
    approved_by: Mapped[str | None] = mapped_column(String(64))
    reason: Mapped[str] = mapped_column(Text, default="")  # why it was proposed
    tag: Mapped[str | None] = mapped_column(String(64))  # who proposed it, e.g. rule:12 (its position follows fills)
    note: Mapped[str] = mapped_column(Text, default="")  # how it filled, or why it did not
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class PaperFill(Base):
    """One execution of an order, with each fee to the fen."""

    __tablename__ = "paper_fills"
    __table_args__ = (Index("ix_paper_fills_account_code_date", "account", "ts_code", "trade_date"),)

    id: Mapped[int] = mapped_column(_id, primary_key=True, autoincrement=True)
    order_id: Mapped[int] = mapped_column(_id, ForeignKey("paper_orders.id", ondelete="CASCADE"), index=True)
    account: Mapped[str] = mapped_column(String(64))
    ts_code: Mapped[str] = mapped_column(String(16))
    side: Mapped[str] = mapped_column(String(4))
    quantity: Mapped[int] = mapped_column(BigInteger)
    price_fen: Mapped[int] = mapped_column(BigInteger)
    value_fen: Mapped[int] = mapped_column(BigInteger)
    commission_fen: Mapped[int] = mapped_column(BigInteger)
    stamp_duty_fen: Mapped[int] = mapped_column(BigInteger)
    transfer_fee_fen: Mapped[int] = mapped_column(BigInteger)
    handling_fee_fen: Mapped[int] = mapped_column(BigInteger)
    regulator_fee_fen: Mapped[int] = mapped_column(BigInteger)
    trade_date: Mapped[str] = mapped_column(String(8))
    basis: Mapped[str] = mapped_column(Text)  # e.g. "simulated fill at the last available close"
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class PaperPosition(Base):
    """Shares held, their cost (buy value plus buy fees, reduced pro rata by sells) and realised P&L."""

    __tablename__ = "paper_positions"

    account: Mapped[str] = mapped_column(String(64), ForeignKey("paper_accounts.name", ondelete="CASCADE"),
                                         primary_key=True)
    ts_code: Mapped[str] = mapped_column(String(16), primary_key=True)
    quantity: Mapped[int] = mapped_column(BigInteger)
    cost_fen: Mapped[int] = mapped_column(BigInteger)
    realised_fen: Mapped[int] = mapped_column(BigInteger, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class CashEntry(Base):
    """The cash ledger: every change of an account's cash, with the balance after it."""

    __tablename__ = "paper_ledger"

    id: Mapped[int] = mapped_column(_id, primary_key=True, autoincrement=True)
    account: Mapped[str] = mapped_column(String(64), index=True)
    amount_fen: Mapped[int] = mapped_column(BigInteger)
    balance_fen: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(16))  # deposit, buy, sell, fees
    order_id: Mapped[int | None] = mapped_column(_id)
    trade_date: Mapped[str | None] = mapped_column(String(8))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class PaperMark(Base):
    """The account marked to market at one day's closes: the equity curve."""

    __tablename__ = "paper_marks"

    account: Mapped[str] = mapped_column(String(64), ForeignKey("paper_accounts.name", ondelete="CASCADE"),
                                         primary_key=True)
    trade_date: Mapped[str] = mapped_column(String(8), primary_key=True)
    cash_fen: Mapped[int] = mapped_column(BigInteger)
    market_value_fen: Mapped[int] = mapped_column(BigInteger)
    equity_fen: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class OrderEvent(Base):
    """The order audit trail: proposed, approved, edited, rejected, refused, expired, submitted, filled,
    cancelled, and the account and switch changes, with who and when."""

    __tablename__ = "order_events"
    __table_args__ = {"info": {"audit_chain": True}}  # every row is in its account's chain (tools/audit/chain.py)

    id: Mapped[int] = mapped_column(_id, primary_key=True, autoincrement=True)
    client_order_id: Mapped[str | None] = mapped_column(String(128), index=True)
    account: Mapped[str | None] = mapped_column(String(64))
    event: Mapped[str] = mapped_column(String(16))
    actor: Mapped[str | None] = mapped_column(String(64))
    detail: Mapped[dict] = mapped_column(JSON, default=dict)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class TradingSwitch(Base):
    """The kill switch: one row; while `enabled` is false nothing is submitted or filled."""

    __tablename__ = "trading_switch"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    enabled: Mapped[bool] = mapped_column(Boolean)
    changed_by: Mapped[str | None] = mapped_column(String(64))
    changed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SimulatedClock(Base):
    """The paper accounts' simulated session date on static data: one row for the whole database (every account
    shares it), absent until a trader first moves it (the data's last day is today until then). It holds while the
    data still ends on `data_end`: other data (new bars, another provider) starts again at its own last day."""

    __tablename__ = "simulated_clock"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_date: Mapped[str] = mapped_column(String(8))  # YYYYMMDD
    data_end: Mapped[str] = mapped_column(String(8))  # the data's last day when it was moved
    moved_by: Mapped[str | None] = mapped_column(String(64))
    moved_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class PaperMandate(Base):
    """An account's mandate, set by its admins (tools/broker/mandate.py): what may ever be proposed or placed.
    Absent: no mandate. Its changes are order events (`mandate set`), in the account's audit chain."""

    __tablename__ = "paper_mandates"

    account: Mapped[str] = mapped_column(String(64), primary_key=True)
    allow: Mapped[list] = mapped_column(JSON, default=list)  # codes, boards, "ST": only these (empty: any)
    block: Mapped[list] = mapped_column(JSON, default=list)  # codes, boards, "ST": never these
    max_orders_per_day: Mapped[int | None] = mapped_column(Integer)
    max_exposure_fen: Mapped[int | None] = mapped_column(BigInteger)  # gross: positions at their marks
    max_turnover_fen: Mapped[int | None] = mapped_column(BigInteger)  # per session: the value of its orders
    changed_by: Mapped[str | None] = mapped_column(String(64))
    changed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
