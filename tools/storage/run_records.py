"""Durable run records (ARCHITECTURE §7): human decisions and the posts that carry questions and results.
Kept beside models.py on the same metadata; migration 0005 creates them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tools.storage.models import Base, utcnow


class DecisionRecord(Base):
    """One human decision on one interrupt: accepted when inserted, applied when the checkpoint moved on."""

    __tablename__ = "decisions"

    interrupt_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    thread_id: Mapped[str] = mapped_column(String(64), index=True)
    decision: Mapped[dict] = mapped_column(JSON)  # LangChain HITL shape: {"type": "approve" | ...}
    decided_by: Mapped[str | None] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(String(16))  # button, modal, thread reply, console, api
    decided_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    applied_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    outcome: Mapped[str | None] = mapped_column(String(16))  # None (pending), applied, failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    next_attempt_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    claimed_by: Mapped[str | None] = mapped_column(String(64))
    claimed_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class PostRecord(Base):
    """A question or result that must reach the thread: `ts` stays empty until Slack accepted the message, and
    `completed_at` until everything that goes with it (a result's uploads) was done."""

    __tablename__ = "posts"

    key: Mapped[str] = mapped_column(String(128), primary_key=True)  # interrupt id, or result:<thread>:<id>
    thread_id: Mapped[str] = mapped_column(String(64), index=True)
    kind: Mapped[str] = mapped_column(String(16))  # interrupt, result
    body: Mapped[dict] = mapped_column(JSON, default=dict)  # a result: {"workflow", "result"}
    ts: Mapped[str | None] = mapped_column(String(32))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    posted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    completed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    claimed_by: Mapped[str | None] = mapped_column(String(64))  # a worker re-posting it now
    claimed_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
