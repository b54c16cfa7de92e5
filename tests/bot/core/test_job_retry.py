"""Which job failures are retried (issue 39, item 3): a database or network failure anywhere in a job leaves its
message not done and is retried by procrastinate with backoff, up to the last attempt; a failure of the job's own
making, or the last attempt's, is final. A worker's shutdown is retried at once, however often."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
import sqlalchemy.exc
from procrastinate.exceptions import JobAborted
from procrastinate.jobs import Job
from sqlalchemy import Engine

from bot.jobs.base import run_text_job
from bot.jobs.failures import RetryLater, last_attempt
from bot.jobs.inbox import Inbox, Message
from bot.jobs.pg import RETRIES, RUN_RETRY

DOWN = sqlalchemy.exc.OperationalError("SELECT 1", {}, psycopg.OperationalError("the database system is shutting down"))


def _job(attempts: int) -> Job:
    return Job(id=1, queue="runs", lock="t", queueing_lock=None, task_name="quantdesk.run_text", attempts=attempts)


@pytest.mark.parametrize("error", [DOWN, psycopg.errors.SerializationFailure("could not serialize"),
                                   RetryLater("the run met the database failing")])
def test_an_infrastructure_error_is_retried_with_backoff_until_the_last_attempt(error: Exception) -> None:
    waits = []
    for attempts in range(RETRIES):
        decision = RUN_RETRY.get_retry_decision(exception=error, job=_job(attempts))
        assert decision is not None and decision.retry_at is not None
        waits.append(decision.retry_at)
    assert waits == sorted(waits)  # later and later
    assert RUN_RETRY.get_retry_decision(exception=error, job=_job(RETRIES)) is None


def test_a_jobs_own_error_is_final_and_a_shutdown_is_retried_at_once() -> None:
    assert RUN_RETRY.get_retry_decision(exception=ValueError("a bug"), job=_job(0)) is None
    assert RUN_RETRY.get_retry_decision(exception=JobAborted(), job=_job(RETRIES + 3)) is not None


class _Handler:
    def __init__(self, error: Exception) -> None:
        self.error = error
        self.last: list[bool] = []

    def run_text(self, message: Message) -> None:
        self.last.append(last_attempt())
        raise self.error

    def apply_decision(self, interrupt_id: str, thread_id: str) -> None:
        raise AssertionError("not used")


@pytest.mark.parametrize(("error", "done"), [(DOWN, False), (RetryLater("retry"), False), (ValueError("bug"), True)])
def test_a_message_stays_not_done_when_its_job_is_retried(sqlite_engine: Engine, error: Exception,
                                                           done: bool) -> None:
    inbox = Inbox(sqlite_engine)
    message = Message("msg:C1:1.0", "T1", "C1", "1.0", "U1", "signal rsi")
    assert inbox.record(message.key, message.thread_id, message.payload())
    handler = _Handler(error)
    args: dict[str, Any] = message.payload()
    with pytest.raises(type(error)):
        run_text_job(handler, inbox, args)
    assert inbox.is_done(message.key) is done
    assert handler.last == [True]  # outside a retrying queue every attempt is the last
