"""A throw-away PostgreSQL database for a benchmark, dropped afterwards."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

PG_ADMIN = os.environ.get("QUANTDESK_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")


class PostgresUnavailable(RuntimeError):
    """The benchmark's PostgreSQL server cannot be reached."""


@contextmanager
def scratch_database() -> Iterator[str]:
    """The URL of a new empty database on the server of QUANTDESK_TEST_PG_URL; dropped on exit."""
    name = f"qd_bench_{uuid.uuid4().hex[:8]}"
    try:
        with psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        raise PostgresUnavailable(str(exc)) from None
    try:
        yield f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
