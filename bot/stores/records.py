"""The bot's own tables: threads, people's languages, the audit log of human decisions, decisions and posts (the
inbox is in bot/jobs/inbox.py). On the one metadata of tools.storage.models; the one Alembic history creates them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, BigInteger, DateTime, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from tools.storage.models import Base, utcnow


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
    language: Mapped[str | None] = mapped_column(String(8))  # its starter's, kept for the thread's life (0017)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class PersonLanguage(Base):
    """The language a person chose (`lang zh|en`); without a row their locale or the workspace default applies."""

    __tablename__ = "person_languages"

    user_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    language: Mapped[str] = mapped_column(String(8))
    chosen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class AuditEntry(Base):
    """Every human decision (approve, edit, reject, respond, clarify answer)."""

    __tablename__ = "audit_log"
    __table_args__ = {"info": {"audit_chain": True}}  # every row is in the global chain (tools/audit/chain.py)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                    autoincrement=True)
    thread_id: Mapped[str] = mapped_column(String(64), index=True)
    interrupt_id: Mapped[str | None] = mapped_column(String(64), index=True)  # 0020
    user_id: Mapped[str] = mapped_column(String(32))
    action: Mapped[str] = mapped_column(String(32))
    detail: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DecisionRecord(Base):
    """One human decision on one interrupt: accepted when inserted, applied when the checkpoint moved on."""

    __tablename__ = "decisions"

    interrupt_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    thread_id: Mapped[str] = mapped_column(String(64), index=True)
    decision: Mapped[dict] = mapped_column(JSON)  # LangChain HITL shape: {"type": "approve" | ...}
    decided_by: Mapped[str | None] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(String(16))  # button, modal, thread reply, console, api, trading switch
    decided_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    applied_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    outcome: Mapped[str | None] = mapped_column(String(16))  # None (pending), applied, failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    next_attempt_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    claimed_by: Mapped[str | None] = mapped_column(String(64))
    claimed_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    message_key: Mapped[str | None] = mapped_column(String(160), unique=True)  # a thread reply's message (0013)


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


class HomeRecord(Base):
    """A person's home (Slack's App Home): `version` counts the changes that concern them, `published_version`
    the latest one a publish showed; a claim keeps two processes from publishing one person's home at once."""

    __tablename__ = "homes"

    user_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, default=1)
    published_version: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)  # failed publishes since the last that worked
    last_error: Mapped[str | None] = mapped_column(Text)
    changed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    published_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    claimed_by: Mapped[str | None] = mapped_column(String(64))
    claimed_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    notice: Mapped[str | None] = mapped_column(Text)  # said about a click, shown by the first publish of ...
    notice_version: Mapped[int | None] = mapped_column(Integer)  # ... this version or a later one (migration 0019)
