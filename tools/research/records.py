"""The research-honesty tables (migration 0025): trials, the team library, the decay monitor's state."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, Double, ForeignKey, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tools.storage.models import ID, Base, utcnow


class TrialRecord(Base):
    """One evaluation of a variant on a universe and period (a code attempt the model tried counts too, without a
    series): who, in which research thread, its in-sample Sharpe moments and its return series (float32, compact)."""

    __tablename__ = "research_trials"

    id: Mapped[int] = mapped_column(ID, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(200), unique=True)  # idempotency: thread, run and variant
    thread_id: Mapped[str] = mapped_column(String(128), index=True)
    person: Mapped[str | None] = mapped_column(String(64), index=True)
    kind: Mapped[str] = mapped_column(String(16))  # factor, attempt
    name: Mapped[str] = mapped_column(String(100))
    universe: Mapped[str] = mapped_column(String(64))
    start: Mapped[str] = mapped_column(String(8))
    end: Mapped[str] = mapped_column(String(8))
    sharpe: Mapped[float | None] = mapped_column(Double)  # per observation
    observations: Mapped[int | None] = mapped_column(Integer)
    skew: Mapped[float | None] = mapped_column(Double)
    kurtosis: Mapped[float | None] = mapped_column(Double)
    dates: Mapped[bytes | None] = mapped_column(LargeBinary)  # int32 YYYYMMDD
    returns: Mapped[bytes | None] = mapped_column(LargeBinary)  # float32
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LibraryEntry(Base):
    """A factor version in the team library: it passed the gate, or was saved anyway (with the reason)."""

    __tablename__ = "factor_library"

    factor_id: Mapped[int] = mapped_column(ID, ForeignKey("factors.id", ondelete="CASCADE"), primary_key=True)
    added_by: Mapped[str | None] = mapped_column(String(64))
    how: Mapped[str] = mapped_column(String(16))  # gate, anyway
    reason: Mapped[str | None] = mapped_column(Text)
    gate: Mapped[dict] = mapped_column(JSON, default=dict)  # the gate's verdict when it was added
    added_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DecayRecord(Base):
    """The decay monitor's state of a library factor (tools/research/decay.py)."""

    __tablename__ = "factor_decay"

    factor_id: Mapped[int] = mapped_column(ID, ForeignKey("factors.id", ondelete="CASCADE"), primary_key=True)
    state: Mapped[str] = mapped_column(String(16))  # active, weakening, dead
    since: Mapped[str] = mapped_column(String(8))  # the session it entered the state
    checked: Mapped[str] = mapped_column(String(8))  # the last session evaluated
    pending: Mapped[str | None] = mapped_column(String(16))  # a state the figures point to, not yet confirmed
    pending_count: Mapped[int] = mapped_column(Integer, default=0)
    figures: Mapped[dict] = mapped_column(JSON, default=dict)
