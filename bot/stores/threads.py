"""Thread registry and persistent dedupe, on the application database.

A thread (team, channel, thread root ts) maps to one stable LangGraph thread id, derived from the
key so that every process computes the same id; the row stores the workflow, the requester, the status
and the pending interrupts with the Slack message that shows each. Dedupe keys (event ids, channel:ts,
decisions on an interrupt) are claimed by inserting a primary key, so the first claimant wins across
retries, restarts and replicas."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.stores.records import AuditEntry, ThreadRecord
from bot.surfaces import surface_of
from tools.storage.models import utcnow

STATUSES = ("running", "waiting", "done", "failed")


class RegistryError(RuntimeError):
    """A thread that cannot be mapped or found."""


@dataclass(frozen=True)
class ThreadInfo:
    thread_id: str
    team_id: str
    channel_id: str
    thread_ts: str
    workflow: str | None
    user_id: str | None
    status: str
    pending: dict[str, Any]
    language: str | None = None  # its starter's language, fixed when the thread was opened


def thread_id_for(team_id: str, channel_id: str, thread_ts: str) -> str:
    """The stable LangGraph thread id of a thread: its surface's scope (bot/surfaces.py), then a digest (the scope is
    what a process serves: its background work takes only its own surface's threads)."""
    digest = hashlib.sha256(f"{team_id}:{channel_id}:{thread_ts}".encode()).hexdigest()[:24]
    return f"{surface_of(team_id).scope}{digest}"


def _info(row: ThreadRecord) -> ThreadInfo:
    return ThreadInfo(row.thread_id, row.team_id, row.channel_id, row.thread_ts, row.workflow, row.user_id,
                      row.status, dict(row.pending or {}), row.language)


class ThreadRegistry:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def open(self, team_id: str, channel_id: str, thread_ts: str, user_id: str | None,
             workflow: str | None = None, language: str | None = None) -> tuple[ThreadInfo, bool]:
        """The thread's record, created when new (speaking `language`, its starter's, for good); returns (info,
        created)."""
        thread_id = thread_id_for(team_id, channel_id, thread_ts)
        with Session(self.engine) as session:
            row = session.get(ThreadRecord, thread_id)
            if row is not None:
                if (row.team_id, row.channel_id, row.thread_ts) != (team_id, channel_id, thread_ts):
                    raise RegistryError(f"thread id {thread_id} is already mapped to another Slack thread")
                return _info(row), False
            row = ThreadRecord(thread_id=thread_id, team_id=team_id, channel_id=channel_id, thread_ts=thread_ts,
                               workflow=workflow, user_id=user_id, status="running", pending={},
                               language=language)
            session.add(row)
            try:
                session.commit()
            except IntegrityError:  # another process created it first
                session.rollback()
                return _info(session.get_one(ThreadRecord, thread_id)), False
            return _info(row), True

    def find(self, team_id: str, channel_id: str, thread_ts: str) -> ThreadInfo | None:
        return self.get(thread_id_for(team_id, channel_id, thread_ts))

    def get(self, thread_id: str) -> ThreadInfo | None:
        with Session(self.engine) as session:
            row = session.get(ThreadRecord, thread_id)
            return _info(row) if row else None

    def update(self, thread_id: str, *, status: str | None = None, workflow: str | None = None,
               pending: dict[str, Any] | None = None) -> ThreadInfo:
        """Set status, workflow or the whole pending map (interrupt id -> {"ts", "kind"})."""
        if status is not None and status not in STATUSES:
            raise RegistryError(f"unknown thread status {status!r}")
        with Session(self.engine) as session, session.begin():
            row = session.get(ThreadRecord, thread_id)
            if row is None:
                raise RegistryError(f"no thread {thread_id}")
            if status is not None:
                row.status = status
            if workflow is not None:
                row.workflow = workflow
            if pending is not None:
                row.pending = dict(pending)
            row.updated_at = utcnow()
            return _info(row)

    def waiting_in(self, team_id: str, channel_id: str) -> list[ThreadInfo]:
        """The channel's threads that wait on a person (any requester), oldest first."""
        with Session(self.engine) as session:
            rows = session.scalars(select(ThreadRecord).where(ThreadRecord.team_id == team_id,
                                                              ThreadRecord.channel_id == channel_id,
                                                              ThreadRecord.status == "waiting")
                                   .order_by(ThreadRecord.updated_at)).all()
            return [_info(r) for r in rows]

    def waiting(self, scope: str = "") -> list[ThreadInfo]:
        """Threads that wait on a person (of thread ids starting with `scope`), oldest first."""
        with Session(self.engine) as session:
            rows = session.scalars(select(ThreadRecord).where(ThreadRecord.status == "waiting",
                                                              ThreadRecord.thread_id.startswith(scope))
                                   .order_by(ThreadRecord.updated_at)).all()
            return [_info(r) for r in rows]

    def threads_of(self, user_id: str, statuses: tuple[str, ...] = ("running", "waiting")) -> list[ThreadInfo]:
        with Session(self.engine) as session:
            rows = session.scalars(select(ThreadRecord).where(ThreadRecord.user_id == user_id,
                                                              ThreadRecord.status.in_(statuses))
                                   .order_by(ThreadRecord.updated_at.desc())).all()
            return [_info(r) for r in rows]


MAX_KEY = 160  # inbox.key: a dedupe key longer than this is stored hashed


def dedupe_key(key: str, limit: int = MAX_KEY) -> str:
    """`key` itself when it fits the column, else its readable start and the sha256 of all of it (never
    truncated, so two long keys that share a prefix stay distinct)."""
    if len(key) <= limit:
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()
    return f"{key[:limit - len(digest) - 1]}#{digest}"


class AuditLog:
    """Every human decision, append-only, each in the global audit chain: written with its decision
    (`DecisionStore.accept`), read here."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def entries(self, thread_id: str) -> list[dict[str, Any]]:
        with Session(self.engine) as session:
            rows = session.scalars(select(AuditEntry).where(AuditEntry.thread_id == thread_id)
                                   .order_by(AuditEntry.id)).all()
            return [{"user_id": r.user_id, "action": r.action, "interrupt_id": r.interrupt_id, "detail": r.detail}
                    for r in rows]
