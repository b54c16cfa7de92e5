"""Artifacts: the charts and files a run produces, stored in the database rather than on a host's disk, so that
whichever worker finishes a run uploads them and any replica (or the console) can fetch them again.

Graph state and results carry only refs ({id, kind, filename, title, mime, size}), never paths. A put is
idempotent on (thread, run key, kind): nodes re-run on resume, and a re-run stores nothing new. With a
retention set, `put` purges artifacts older than it, at most once an hour per store."""

from __future__ import annotations

import logging
import re
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypedDict

from sqlalchemy import BigInteger, DateTime, Engine, LargeBinary, Row, String, UniqueConstraint, delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Mapped, Session, mapped_column

from tools.storage.models import Base, utcnow

log = logging.getLogger(__name__)

PURGE_EVERY = 3600.0  # seconds between the retention purges one store runs from `put`
_FILENAME = re.compile(r"(?!\.\.?\Z)[A-Za-z0-9_.\-]{1,255}")  # a plain file name: no directories
_LIMITS = {"thread_id": 64, "run_key": 128, "kind": 32, "mime": 100}  # column widths of the artifacts table
_TITLE_MAX = 300


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


class ArtifactRef(TypedDict):
    """What graph state and results keep about an artifact."""

    id: str
    kind: str
    filename: str
    title: str
    mime: str
    size: int


@dataclass(frozen=True)
class StoredArtifact:
    """An artifact's bytes and metadata, as `ArtifactStore.get` returns them."""

    id: str
    thread_id: str
    kind: str
    filename: str
    title: str
    mime: str
    size: int
    data: bytes
    created_at: datetime

    @property
    def ref(self) -> ArtifactRef:
        return ArtifactRef(id=self.id, kind=self.kind, filename=self.filename, title=self.title, mime=self.mime,
                           size=self.size)


_REF_COLUMNS = (Artifact.id, Artifact.kind, Artifact.filename, Artifact.title, Artifact.mime, Artifact.size)


class ArtifactStore:
    """Artifacts on the application database. Cheap to create; all state but the purge clock is in the database.

    `retention_days` > 0 makes `put` drop artifacts older than that many days; 0 keeps them forever."""

    def __init__(self, engine: Engine, retention_days: int = 0) -> None:
        if retention_days < 0:
            raise ValueError("retention_days must be 0 (keep forever) or more")
        self.engine = engine
        self.retention_days = retention_days
        self._purged_at: float | None = None

    def put(self, thread_id: str, run_key: str, kind: str, filename: str, title: str, mime: str,
            data: bytes) -> ArtifactRef:
        """Store one artifact of a run; the same (thread, run key, kind) again returns the first one's ref."""
        _check(thread_id=thread_id, run_key=run_key, kind=kind, mime=mime)
        if not _FILENAME.fullmatch(filename):
            raise ValueError(f"bad artifact file name {filename!r}: letters, digits, _ . - only, no directories")
        if not isinstance(data, bytes):
            raise TypeError(f"artifact data must be bytes, not {type(data).__name__}")
        insert = postgresql.insert if self.engine.dialect.name == "postgresql" else sqlite.insert
        statement = insert(Artifact).values(
            id=uuid.uuid4().hex, thread_id=thread_id, run_key=run_key, kind=kind, filename=filename,
            title=title[:_TITLE_MAX], mime=mime, size=len(data), data=data, created_at=utcnow(),
        ).on_conflict_do_nothing(index_elements=["thread_id", "run_key", "kind"])
        with Session(self.engine) as session, session.begin():
            stored = session.execute(statement).rowcount
            row = session.execute(select(*_REF_COLUMNS).where(
                Artifact.thread_id == thread_id, Artifact.run_key == run_key, Artifact.kind == kind)).one()
        ref = _ref(row)
        log.debug("artifact %s %s of %s/%s: %s", ref["id"], kind, thread_id, run_key,
                  f"stored, {len(data)} bytes" if stored else "already stored")
        self._purge_if_due()
        return ref

    def get(self, artifact_id: str) -> StoredArtifact | None:
        """An artifact's bytes and metadata, or None when it is not (or no longer) stored."""
        with Session(self.engine) as session:
            row = session.get(Artifact, artifact_id)
            if row is None:
                return None
            return StoredArtifact(row.id, row.thread_id, row.kind, row.filename, row.title, row.mime, row.size,
                                  bytes(row.data), row.created_at)

    def list(self, thread_id: str) -> list[ArtifactRef]:
        """The refs of a thread's artifacts, oldest first."""
        query = (select(*_REF_COLUMNS).where(Artifact.thread_id == thread_id)
                 .order_by(Artifact.created_at, Artifact.filename))
        with Session(self.engine) as session:
            return [_ref(row) for row in session.execute(query)]

    def delete(self, artifact_ids: list[str]) -> int:
        """Drop artifacts by id; returns how many were stored."""
        if not artifact_ids:
            return 0
        with Session(self.engine) as session, session.begin():
            removed = session.execute(delete(Artifact).where(Artifact.id.in_(artifact_ids))).rowcount
        log.info("deleted %d artifact(s)", removed)
        return removed

    def purge(self, older_than: timedelta) -> int:
        """Drop every artifact stored more than `older_than` ago; returns how many."""
        cutoff = utcnow() - older_than
        with Session(self.engine) as session, session.begin():
            removed = session.execute(delete(Artifact).where(Artifact.created_at < cutoff)).rowcount
        log.log(logging.INFO if removed else logging.DEBUG, "purged %d artifact(s) stored before %s", removed,
                f"{cutoff:%Y-%m-%d %H:%M}")
        return removed

    def export(self, artifact_id: str, folder: Path) -> Path | None:
        """Write an artifact's bytes to `folder`/its file name; None when it is no longer stored."""
        stored = self.get(artifact_id)
        if stored is None:
            return None
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / stored.filename
        path.write_bytes(stored.data)
        return path

    def _purge_if_due(self) -> None:
        now = time.monotonic()
        if not self.retention_days or (self._purged_at is not None and now - self._purged_at < PURGE_EVERY):
            return
        self._purged_at = now
        try:
            self.purge(timedelta(days=self.retention_days))
        except SQLAlchemyError:  # retention is housekeeping: a failed purge must not fail the run that stored
            log.warning("artifact purge failed; it is tried again in %.0f s", PURGE_EVERY, exc_info=True)


def _check(**values: str) -> None:
    for name, value in values.items():
        if not value or len(value) > _LIMITS[name]:
            raise ValueError(f"artifact {name} must be 1 to {_LIMITS[name]} characters, got {value!r}")


def _ref(row: Row) -> ArtifactRef:
    return ArtifactRef(id=row.id, kind=row.kind, filename=row.filename, title=row.title, mime=row.mime,
                       size=int(row.size))
