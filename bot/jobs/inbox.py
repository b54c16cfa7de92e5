"""The inbox: every message the bot will run (typed by a person, or a run the background service starts), recorded
before its job is enqueued (migration 0006).

The key (channel:ts or the event id) is the primary key, so recording is the persistent dedupe: a Slack retry
or the second delivery of one post finds the row and enqueues nothing. `enqueued_at` is claimed in the same
transaction that enqueues the job (PostgreSQL), so a recorded message is enqueued exactly once even when several
processes requeue; `done_at` is set when its run ended."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import JSON, Connection, DateTime, Engine, String, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column

from bot.stores.threads import thread_id_for
from tools.storage.models import Base, utcnow


@dataclass(frozen=True)
class Message:
    """A message, mention or slash command to run in a thread. `key` is its dedupe key (channel:ts or the event
    id); `thread_id` defaults to the registry's id for (team, channel, thread_ts). `request` is a structured request
    a workflow's background job made (a scheduled run); `text` then only says what it is."""

    key: str
    team: str
    channel: str
    thread_ts: str
    user: str
    text: str
    thread_id: str = field(default="")
    request: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not self.thread_id:
            object.__setattr__(self, "thread_id", thread_id_for(self.team, self.channel, self.thread_ts))

    def payload(self) -> dict[str, Any]:
        return asdict(self)


class InboxRecord(Base):
    """One message to run: recorded, then enqueued, then done."""

    __tablename__ = "inbox"

    key: Mapped[str] = mapped_column(String(160), primary_key=True)
    thread_id: Mapped[str] = mapped_column(String(64), index=True)
    payload: Mapped[dict] = mapped_column(JSON)  # the Message fields
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    enqueued_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), index=True)
    done_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), index=True)


_inbox = Base.metadata.tables[InboxRecord.__tablename__]


def posted_at(key: str) -> float:
    """When Slack posted the message a key names (`msg:CHANNEL:TS`); infinitely late for keys without a ts (the
    bot's own threads), which then keep their arrival order."""
    prefix, _, ts = key.rpartition(":")
    try:
        return float(ts) if prefix.startswith("msg:") else float("inf")
    except ValueError:
        return float("inf")


class Inbox:
    def __init__(self, engine: Engine, scope: str = "") -> None:
        """`scope`: the thread-id prefix of the surface this process serves (its requeues take no other's rows)."""
        self.engine = engine
        self.scope = scope

    def _in_scope(self) -> Any:
        return _inbox.c.thread_id.startswith(self.scope)

    def record(self, key: str, thread_id: str, payload: dict[str, Any]) -> bool:
        """Insert the message's row; False when the key is already there."""
        try:
            with self.engine.begin() as connection:
                connection.execute(_inbox.insert().values(key=key, thread_id=thread_id, payload=payload,
                                                          received_at=utcnow()))
        except IntegrityError:
            return False
        return True

    def claim(self, connection: Connection, key: str) -> bool:
        """Mark the row enqueued, on `connection` (commit it with the enqueue); False when someone else did."""
        done = connection.execute(update(_inbox).where(_inbox.c.key == key, _inbox.c.enqueued_at.is_(None),
                                                       _inbox.c.done_at.is_(None)).values(enqueued_at=utcnow()))
        return done.rowcount == 1

    def unqueued(self, older_than: float, limit: int = 200) -> list[Message]:
        """Messages recorded at least `older_than` seconds ago and never enqueued, oldest first."""
        cutoff = utcnow() - timedelta(seconds=older_than)
        with self.engine.connect() as connection:
            rows = connection.execute(select(_inbox.c.payload).where(
                _inbox.c.enqueued_at.is_(None), _inbox.c.done_at.is_(None), _inbox.c.received_at <= cutoff,
                self._in_scope())
                .order_by(_inbox.c.received_at).limit(limit)).all()
        return [Message(**row.payload) for row in rows]

    def release_unfinished(self, enqueued_before: datetime) -> int:
        """Forget the enqueueing of unfinished messages enqueued before `enqueued_before` (their in-process queue
        died with its process), so `unqueued` returns them again; returns how many."""
        with self.engine.begin() as connection:
            done = connection.execute(update(_inbox).where(
                _inbox.c.done_at.is_(None), _inbox.c.enqueued_at < enqueued_before, self._in_scope())
                .values(enqueued_at=None))
        return done.rowcount

    def pending_before(self, message: Message) -> list[Message]:
        """The thread's messages not yet done that Slack posted before `message` (by message ts; Slack delivers
        events in no guaranteed order and the listener enqueues them as they come), oldest first."""
        with self.engine.connect() as connection:
            rows = connection.execute(select(_inbox.c.payload, _inbox.c.received_at).where(
                _inbox.c.thread_id == message.thread_id, _inbox.c.done_at.is_(None),
                _inbox.c.key != message.key)).all()
        mine = posted_at(message.key)
        earlier = [(posted_at(row.payload["key"]), row.received_at, Message(**row.payload)) for row in rows]
        return [m for when, _received, m in sorted(earlier, key=lambda e: (e[0], e[1])) if when < mine]

    def is_done(self, key: str) -> bool:
        with self.engine.connect() as connection:
            done_at = connection.execute(select(_inbox.c.done_at).where(_inbox.c.key == key)).scalar_one_or_none()
        return done_at is not None

    def mark_done(self, key: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(update(_inbox).where(_inbox.c.key == key, _inbox.c.done_at.is_(None))
                               .values(done_at=utcnow()))
