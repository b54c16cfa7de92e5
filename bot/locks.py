"""One run at a time per thread, holding across processes and replicas.

PostgreSQL: a session-level advisory lock keyed by the thread id, on a connection held for the run.
SQLite (one host by nature): an exclusive `flock` on a lock file beside the database. Both block, so a
second message for a busy thread waits its turn instead of running in parallel."""

from __future__ import annotations

import fcntl
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, text

from tools.storage.db import is_sqlite, sqlite_path


def _advisory_key(thread_id: str) -> int:
    return int.from_bytes(hashlib.sha256(thread_id.encode()).digest()[:8], "big", signed=True)


class ThreadLocks:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        url = engine.url.render_as_string(hide_password=False)
        self._lock_dir = sqlite_path(url).parent / "locks" if is_sqlite(url) else None
        if self._lock_dir is not None:
            self._lock_dir.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def hold(self, thread_id: str) -> Iterator[None]:
        if self._lock_dir is not None:
            with _file_lock(self._lock_dir / f"{thread_id}.lock"):
                yield
            return
        key = _advisory_key(thread_id)
        with self.engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
            connection.commit()
            try:
                yield
            finally:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
                connection.commit()


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
