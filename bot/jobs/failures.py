"""What makes a job run again: a database or network failure under it (the server restarting, a dropped
connection, a serialization conflict) before its outcome was recorded. The job's handler is idempotent (an inbox
row, a checkpoint, keyed posts), so running it again finishes what the failure cut short, once."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import psycopg
import psycopg_pool
import sqlalchemy.exc

# Errors of the infrastructure under a run (database, pool, network), as opposed to errors of the graph itself.
# psycopg's serialization and deadlock errors are OperationalErrors (TransactionRollback).
INFRASTRUCTURE_ERRORS: tuple[type[Exception], ...] = (
    sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError, sqlite3.OperationalError,
    psycopg.OperationalError, psycopg.InterfaceError, psycopg_pool.PoolTimeout, ConnectionError, TimeoutError)


class RetryLater(Exception):
    """A run met an infrastructure error that the runner caught and reported (its outcome was not shown): the job
    is run again later, and goes on from the run's last checkpoint."""


RETRIED_ERRORS: tuple[type[Exception], ...] = (RetryLater, *INFRASTRUCTURE_ERRORS)

_last_attempt: ContextVar[bool] = ContextVar("quantdesk_last_attempt", default=True)


def last_attempt() -> bool:
    """Whether the running job will not be run again after a failure (always True outside a retrying queue)."""
    return _last_attempt.get()


@contextmanager
def attempt_scope(last: bool) -> Iterator[None]:
    token = _last_attempt.set(last)
    try:
        yield
    finally:
        _last_attempt.reset(token)
