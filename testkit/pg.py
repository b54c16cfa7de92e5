"""Databases of their own on the test PostgreSQL server (QUANTDESK_TEST_PG_URL): created for a test, dropped after;
an unreachable server fails the test under CI=true and skips it elsewhere."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

PG_ADMIN_URL = os.environ.get("QUANTDESK_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _pg_unreachable_reason() -> str | None:
    try:
        with psycopg.connect(PG_ADMIN_URL, connect_timeout=3):
            return None
    except psycopg.Error as exc:
        return f"PostgreSQL at {PG_ADMIN_URL} is unreachable: {exc}"


@contextmanager
def fresh_pg_database() -> Iterator[str]:
    reason = _pg_unreachable_reason()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    name = f"qd_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def migrated_pg_database() -> Iterator[str]:
    """A new PostgreSQL database at the code's migration head (what `quantdesk db upgrade` leaves), dropped after."""
    with fresh_pg_database() as url:
        engine = make_engine(url)
        upgrade(engine)
        engine.dispose()
        yield url
