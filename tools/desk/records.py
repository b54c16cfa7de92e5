"""The decision desk's tables (migrations 0009, 0011): analyst reports and memory summaries, decisions and their
outcomes."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Dialect,
    Double,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from tools.storage.models import Base, utcnow


class DecimalText(TypeDecorator[Decimal]):
    """A Decimal stored as its exact text, so values read back unchanged on SQLite too (no float affinity)."""

    impl = String(40)
    cache_ok = True

    def process_bind_param(self, value: Decimal | None, dialect: Dialect) -> str | None:
        return None if value is None else str(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> Decimal | None:
        return None if value is None else Decimal(value)


class AnalystReport(Base):
    """One analyst report (seed 001's Memory Controller): every report of (namespace, analyst, symbol, day,
    session) is kept as its own version (1, 2, ...), so a decision's report id always names the text it read. The
    namespace is "live" or a replay's own ("replay:<id>"). Migrations 0009, 0011 (versions)."""

    __tablename__ = "analyst_reports"
    __table_args__ = (UniqueConstraint("namespace", "analyst", "symbol", "trade_date", "session", "version",
                                       name="uq_analyst_reports_version"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # uuid4 hex unless the caller names it
    namespace: Mapped[str] = mapped_column(String(128))
    analyst: Mapped[str] = mapped_column(String(16))  # market, news, sentiment, fundamentals
    symbol: Mapped[str] = mapped_column(String(32))
    trade_date: Mapped[str] = mapped_column(String(8))
    session: Mapped[str] = mapped_column(String(16))  # pre_open, intraday, post_close
    version: Mapped[int] = mapped_column(Integer)  # 1 for the first report of the key; the newest is today_report
    report: Mapped[str] = mapped_column(Text)
    written_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class AnalystSummary(Base):
    """A memory summary of one analyst for one symbol, kept per as-of day so a read for an earlier day gets the
    summary then in force; visible from (as_of_date, as_of_session) on. `through_date` is the last day of what it
    summarizes (post_close: the newest report's day; pre_open: the post-close summary it came from). Migration
    0009."""

    __tablename__ = "analyst_summaries"

    namespace: Mapped[str] = mapped_column(String(128), primary_key=True)
    analyst: Mapped[str] = mapped_column(String(16), primary_key=True)
    symbol: Mapped[str] = mapped_column(String(32), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)  # pre_open, post_close
    as_of_date: Mapped[str] = mapped_column(String(8), primary_key=True)
    as_of_session: Mapped[str] = mapped_column(String(16))
    through_date: Mapped[str] = mapped_column(String(8))
    method: Mapped[str] = mapped_column(String(16))  # model, excerpt (no model configured)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DeskDecision(Base):
    """A trading-desk decision with its inputs: the reports it read, the benchmark universe, the thread.
    `target_position` is a weight, a fraction of the account in [0, 1]; `price` the reference close. Migration
    0009."""

    __tablename__ = "desk_decisions"
    __table_args__ = (Index("ix_desk_decisions_namespace_code_date", "namespace", "ts_code", "trade_date"),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    namespace: Mapped[str] = mapped_column(String(128))
    ts_code: Mapped[str] = mapped_column(String(32))
    trade_date: Mapped[str] = mapped_column(String(8))
    as_of: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    rating: Mapped[str] = mapped_column(String(16))  # Buy, Overweight, Hold, Underweight, Sell
    target_position: Mapped[Decimal] = mapped_column(DecimalText)  # a weight: fraction of the account
    confidence: Mapped[float] = mapped_column(Double)
    price: Mapped[Decimal] = mapped_column(DecimalText)
    report_ids: Mapped[dict] = mapped_column(JSON)  # analyst -> report id
    universe: Mapped[list] = mapped_column(JSON)  # ts_codes of the equal-weight benchmark
    thread_id: Mapped[str] = mapped_column(String(64))
    summary: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DeskDecisionOutcome(Base):
    """What a decision turned out to be `horizon` trading days later; returns are exact decimal fractions."""

    __tablename__ = "desk_decision_outcomes"

    decision_id: Mapped[str] = mapped_column(String(64), ForeignKey("desk_decisions.id", ondelete="CASCADE"),
                                             primary_key=True)
    horizon: Mapped[int] = mapped_column(Integer, primary_key=True)
    exit_date: Mapped[str] = mapped_column(String(8))  # the trading day `horizon` days after trade_date
    entry_close: Mapped[Decimal] = mapped_column(DecimalText)
    exit_close: Mapped[Decimal] = mapped_column(DecimalText)
    realised_return: Mapped[Decimal] = mapped_column(DecimalText)
    benchmark_return: Mapped[Decimal | None] = mapped_column(DecimalText)  # None: no universe code had both closes
    excess_return: Mapped[Decimal | None] = mapped_column(DecimalText)
    benchmark_codes: Mapped[int] = mapped_column(Integer)  # universe codes with both closes (the mean's n)
    universe_size: Mapped[int] = mapped_column(Integer)
    hit: Mapped[bool | None] = mapped_column(Boolean)
    resolved_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
