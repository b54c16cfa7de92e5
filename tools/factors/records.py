"""The factor library's tables (migrations 0002, 0003): reviewed factor versions, their backfilled values and
metrics."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, Double, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from tools.storage.models import ID, Base, utcnow


class FactorRecord(Base):
    """One reviewed version of a factor: its code, who wrote and who reviewed it, and the decision."""

    __tablename__ = "factors"
    __table_args__ = (UniqueConstraint("name", "version", name="uq_factors_name_version"),)

    id: Mapped[int] = mapped_column(ID, primary_key=True, autoincrement=True)
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

    factor_id: Mapped[int] = mapped_column(ID, primary_key=True)
    trade_date: Mapped[str] = mapped_column(String(8).with_variant(String(8, collation="C"), "postgresql"),
                                            primary_key=True)
    ts_code: Mapped[str] = mapped_column(String(16).with_variant(String(16, collation="C"), "postgresql"),
                                         primary_key=True)
    value: Mapped[float] = mapped_column(Double)


class FactorMetric(Base):
    """Evaluation figures per forward-return period (tools.factors.ic.FactorEvaluation.metrics)."""

    __tablename__ = "factor_metrics"

    factor_id: Mapped[int] = mapped_column(ID, ForeignKey("factors.id", ondelete="CASCADE"), primary_key=True)
    period: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    value: Mapped[float | None] = mapped_column(Double)
