"""Application tables (ARCHITECTURE §4). Migrations in `migrations/` create them; keep the two in step."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Double,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class ThreadRecord(Base):
    """One Slack (or console) thread mapped to one LangGraph thread id."""

    __tablename__ = "threads"
    __table_args__ = (UniqueConstraint("team_id", "channel_id", "thread_ts", name="uq_threads_slack_key"),)

    thread_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    team_id: Mapped[str] = mapped_column(String(32))
    channel_id: Mapped[str] = mapped_column(String(32))
    thread_ts: Mapped[str] = mapped_column(String(32))
    workflow: Mapped[str | None] = mapped_column(String(32))
    user_id: Mapped[str | None] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16), default="running")
    pending: Mapped[dict] = mapped_column(JSON, default=dict)  # interrupt id -> {"ts": message ts, "kind": ...}
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class AuditEntry(Base):
    """Every human decision (approve, edit, reject, respond, clarify answer)."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                    autoincrement=True)
    thread_id: Mapped[str] = mapped_column(String(64), index=True)
    interrupt_id: Mapped[str | None] = mapped_column(String(64))
    user_id: Mapped[str] = mapped_column(String(32))
    action: Mapped[str] = mapped_column(String(32))
    detail: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


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
