"""The LangGraph checkpointer that matches DATABASE_URL: SqliteSaver or PostgresSaver, set up and ready."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from psycopg import Connection
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool

from tools.storage.db import is_sqlite, libpq_url, sqlite_path


@contextmanager
def open_checkpointer(url: str, *, max_connections: int = 10) -> Iterator[BaseCheckpointSaver]:
    """Yield a checkpointer with `setup()` done; its connections close on exit."""
    if is_sqlite(url):
        path = sqlite_path(url)
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        connection.execute("PRAGMA journal_mode=WAL")
        try:
            sqlite = SqliteSaver(connection)
            sqlite.setup()
            yield sqlite
        finally:
            connection.close()
        return
    pool: ConnectionPool[Connection[DictRow]] = ConnectionPool(
        libpq_url(url),
        min_size=1,
        max_size=max_connections,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=True,
    )
    try:
        saver = PostgresSaver(pool)
        saver.setup()
        yield saver
    finally:
        pool.close()
