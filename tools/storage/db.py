"""Engines for the one DATABASE_URL: SQLite by default, PostgreSQL (psycopg 3) in production."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url


def sqlalchemy_url(url: str) -> str:
    """Map postgres:// and postgresql:// to the psycopg 3 driver; leave others as they are."""
    parsed = make_url(url)
    if parsed.drivername in ("postgres", "postgresql"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def libpq_url(url: str) -> str:
    """The same database as a libpq connection string (for psycopg and the LangGraph checkpointer)."""
    parsed = make_url(url)
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def sqlite_path(url: str) -> Path:
    database = make_url(url).database
    if not database or database == ":memory:":
        raise ValueError("an in-memory SQLite database cannot be shared; use a file path")
    return Path(database)


def redacted(url: str) -> str:
    """The URL with its password hidden, for logs."""
    return make_url(url).render_as_string(hide_password=True)


def warm_pool(engine: Engine) -> None:
    """Open the pool's connections now (PostgreSQL), so the first requests do not each pay a connect."""
    if is_sqlite(str(engine.url)):
        return
    with ExitStack() as held:
        for _ in range(engine.pool.size()):  # type: ignore[attr-defined]
            held.enter_context(engine.connect())


def make_engine(url: str, busy_seconds: float = 30.0) -> Engine:
    """An engine for `url`; SQLite files get WAL mode and a busy timeout (a write waits `busy_seconds` for another
    writer's lock) so two processes can share them."""
    if is_sqlite(url):
        sqlite_path(url).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": busy_seconds, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection, _record) -> None:  # noqa: ANN001
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={int(busy_seconds * 1000)}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        return engine
    return create_engine(sqlalchemy_url(url), pool_pre_ping=True, pool_size=5, max_overflow=10)
