"""Application tables (ARCHITECTURE.md, "Where things go"). Migrations in `migrations/` create them; keep the two
in step."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class WorkspaceFrame(Base):
    """A named wide frame of one thread's workspace, stored as Parquet bytes."""

    __tablename__ = "workspace_frames"

    thread_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    n_rows: Mapped[int] = mapped_column(Integer)
    n_cols: Mapped[int] = mapped_column(Integer)
    first_date: Mapped[str | None] = mapped_column(String(10))
    last_date: Mapped[str | None] = mapped_column(String(10))
    data: Mapped[bytes] = mapped_column(LargeBinary)
    version: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


_id = BigInteger().with_variant(Integer, "sqlite")


class FactorRecord(Base):
    """One reviewed version of a factor: its code, who wrote and who reviewed it, and the decision."""

    __tablename__ = "factors"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_factors_name_version"),)

    id: Mapped[int] = mapped_column(_id, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100), index=True)
    version: Mapped[int] = mapped_column(Integer)
    description: Mapped[str] = mapped_column(Text, default="")
    code: Mapped[str] = mapped_column(Text)
    spec: Mapped[dict] = mapped_column(JSON, default=dict)
    author: Mapped[str | None] = mapped_column(String(64))  # requesting user; the code came from LLM or library
    reviewer: Mapped[str | None] = mapped_column(String(64))
    decision: Mapped[str] = mapped_column(String(16))  # approve, edit, reject
    status: Mapped[str] = mapped_column(String(16))  # active, rejected
    run_key: Mapped[str] = mapped_column(String(128), unique=True)  # idempotency: thread + review interrupt
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class FactorValue(Base):
    """Backfilled values, long format; bulk-loaded (COPY on PostgreSQL).

    factor_id refers to factors.id without a database foreign key (migration 0003 says why); on PostgreSQL
    trade_date and ts_code compare bytewise (COLLATE "C")."""

    __tablename__ = "factor_values"

    factor_id: Mapped[int] = mapped_column(_id, primary_key=True)
    trade_date: Mapped[str] = mapped_column(String(8).with_variant(String(8, collation="C"), "postgresql"),
                                            primary_key=True)
    ts_code: Mapped[str] = mapped_column(String(16).with_variant(String(16, collation="C"), "postgresql"),
                                         primary_key=True)
    value: Mapped[float] = mapped_column(Double)


class FactorMetric(Base):
    """Evaluation figures per forward-return period (tools.evaluation.FactorEvaluation.metrics)."""

    __tablename__ = "factor_metrics"

    factor_id: Mapped[int] = mapped_column(_id, ForeignKey("factors.id", ondelete="CASCADE"), primary_key=True)
    period: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    value: Mapped[float | None] = mapped_column(Double)


class Artifact(Base):
    """A chart or file a run produced, kept in the database so that whichever worker finishes the run uploads
    it; (thread, run key, kind) is unique, so a node that re-runs stores it once."""

    __tablename__ = "artifacts"
    __table_args__ = (UniqueConstraint("thread_id", "run_key", "kind", name="uq_artifacts_thread_run_kind"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # uuid4 hex
    thread_id: Mapped[str] = mapped_column(String(64))
    run_key: Mapped[str] = mapped_column(String(128))
    kind: Mapped[str] = mapped_column(String(32))
    filename: Mapped[str] = mapped_column(String(255))
    title: Mapped[str] = mapped_column(String(300))
    mime: Mapped[str] = mapped_column(String(100))
    size: Mapped[int] = mapped_column(BigInteger)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)


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
