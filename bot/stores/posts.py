"""Durable posts: a question or a result is a row until its surface accepted the message (and, for a result, its
files), so a post a surface refused, or one a crash cut short, is posted again by the background service."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.stores.decisions import CLAIM_SECONDS, claim_row
from bot.stores.records import PostRecord
from tools.storage.models import utcnow


@dataclass(frozen=True)
class Post:
    key: str
    thread_id: str
    kind: str
    body: dict[str, Any]
    ts: str | None
    attempts: int
    last_error: str | None
    complete: bool


def _post(row: PostRecord) -> Post:
    return Post(row.key, row.thread_id, row.kind, dict(row.body or {}), row.ts, row.attempts, row.last_error,
                row.completed_at is not None)


class PostStore:
    def __init__(self, engine: Engine, claim_seconds: float = CLAIM_SECONDS) -> None:
        self.engine = engine
        self.claim_seconds = claim_seconds

    def claim(self, key: str, owner: str, now: datetime | None = None) -> bool:
        """Take an incomplete post to re-post it: one worker at a time (the background service and a job may both
        try)."""
        return claim_row(self.engine, PostRecord, owner, self.claim_seconds, now, PostRecord.key == key,
                      PostRecord.completed_at.is_(None))

    def record(self, key: str, thread_id: str, kind: str, body: dict[str, Any] | None = None) -> tuple[Post, bool]:
        """The post's row and whether this call created it: an existing row means an earlier attempt may have
        reached Slack already, so the thread is checked before posting again."""
        with Session(self.engine) as session:
            row = session.get(PostRecord, key)
            if row is not None:
                return _post(row), False
            row = PostRecord(key=key, thread_id=thread_id, kind=kind, body=dict(body or {}), attempts=0,
                             created_at=utcnow())
            session.add(row)
            try:
                session.commit()
            except IntegrityError:  # another process recorded it a moment ago
                session.rollback()
                return _post(session.get_one(PostRecord, key)), False
            return _post(row), True

    def get(self, key: str) -> Post | None:
        with Session(self.engine) as session:
            row = session.get(PostRecord, key)
            return _post(row) if row else None

    def mark_posted(self, key: str, ts: str) -> None:
        with Session(self.engine) as session, session.begin():
            session.execute(update(PostRecord).where(PostRecord.key == key).values(ts=ts, posted_at=utcnow()))

    def mark_complete(self, key: str) -> None:
        """Everything that goes with the post is done (a result's files uploaded, or their failure reported)."""
        with Session(self.engine) as session, session.begin():
            session.execute(update(PostRecord).where(PostRecord.key == key).values(completed_at=utcnow()))

    def mark_failed(self, key: str, error: str) -> None:
        with Session(self.engine) as session, session.begin():
            row = session.get(PostRecord, key)
            if row is not None:  # the claim goes too: the background service may try again at once
                row.attempts += 1
                row.last_error = error[:2000]
                row.claimed_by = row.claimed_until = None

    def unposted(self, limit: int = 50, scope: str = "") -> list[Post]:
        """Posts not completed: no message yet, or a result whose files were not uploaded yet (of threads whose id
        starts with `scope`)."""
        with Session(self.engine) as session:
            rows = session.scalars(select(PostRecord).where(PostRecord.completed_at.is_(None),
                                                            PostRecord.thread_id.startswith(scope))
                                   .order_by(PostRecord.created_at).limit(limit)).all()
            return [_post(r) for r in rows]
