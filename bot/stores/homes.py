"""Homes (Slack's App Home) to publish: a row a person, versioned. A change that concerns someone bumps their
version; a publish claims the row, shows the version it read and records it; what is left above the published
version (a refused publish, a change during one) is published again by the background service. The claim keeps
two processes from publishing one person's home at once, so an older view never lands over a newer one. A notice
(what is said about a click) is kept on the row until a publish of its version or a later one shows it, whichever
process publishes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Engine, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.stores.decisions import CLAIM_SECONDS, claim_row
from bot.stores.records import HomeRecord
from tools.storage.models import utcnow


@dataclass(frozen=True)
class HomeState:
    user_id: str
    version: int
    published_version: int
    attempts: int
    last_error: str | None
    notice: str | None


def _state(row: HomeRecord) -> HomeState:
    return HomeState(row.user_id, row.version, row.published_version, row.attempts, row.last_error, row.notice)


class HomeStore:
    def __init__(self, engine: Engine, claim_seconds: float = CLAIM_SECONDS) -> None:
        self.engine = engine
        self.claim_seconds = claim_seconds

    def opened(self, user: str, notice: str = "") -> None:
        """The person opened their home, or clicked on it (`notice`: what is said about that): it is theirs from now
        on, and due; the notice waits for the next publish."""
        with Session(self.engine) as session:
            session.add(HomeRecord(user_id=user, version=1, published_version=0, attempts=0, changed_at=utcnow(),
                                   notice=notice or None, notice_version=1 if notice else None))
            try:
                session.commit()
                return
            except IntegrityError:
                session.rollback()
        if not notice:
            self.changed([user])
            return
        with Session(self.engine) as session, session.begin():
            session.execute(update(HomeRecord).where(HomeRecord.user_id == user).values(
                version=HomeRecord.version + 1, changed_at=utcnow(), notice=notice,
                notice_version=HomeRecord.version + 1))

    def changed(self, users: Iterable[str]) -> list[str]:
        """A change concerns `users`: those who have a home are due again (returned)."""
        wanted = sorted({u for u in users if u})
        if not wanted:
            return []
        with Session(self.engine) as session, session.begin():
            done = session.scalars(update(HomeRecord).where(HomeRecord.user_id.in_(wanted))
                                   .values(version=HomeRecord.version + 1, changed_at=utcnow())
                                   .returning(HomeRecord.user_id)).all()
            return list(done)

    def get(self, user: str) -> HomeState | None:
        with Session(self.engine) as session:
            row = session.get(HomeRecord, user)
            return _state(row) if row else None

    def claim(self, user: str, owner: str) -> bool:
        return claim_row(self.engine, HomeRecord, owner, self.claim_seconds, None, HomeRecord.user_id == user)

    def published(self, user: str, version: int) -> bool:
        """The publish of `version` worked: record it and let go of the claim; True when no newer change came."""
        with Session(self.engine) as session, session.begin():
            row = session.get(HomeRecord, user)
            if row is None:
                return True
            row.published_version = max(row.published_version, version)
            if row.notice_version is not None and row.notice_version <= version:  # shown: said once
                row.notice = row.notice_version = None
            row.attempts, row.last_error, row.published_at = 0, None, utcnow()
            row.claimed_by = row.claimed_until = None
            return row.version <= row.published_version

    def refused(self, user: str, error: str) -> None:
        """The publish was refused: count it and let go (the background service tries again)."""
        with Session(self.engine) as session, session.begin():
            row = session.get(HomeRecord, user)
            if row is not None:
                row.attempts += 1
                row.last_error = error[:2000]
                row.claimed_by = row.claimed_until = None

    def due(self, limit: int = 50) -> list[str]:
        """People whose home shows less than its latest version, longest waiting first."""
        with Session(self.engine) as session:
            return list(session.scalars(select(HomeRecord.user_id)
                                        .where(HomeRecord.version > HomeRecord.published_version)
                                        .order_by(HomeRecord.changed_at).limit(limit)))
