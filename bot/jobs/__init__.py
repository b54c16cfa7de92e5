"""The job queue (ARCHITECTURE.md, "Runs are jobs"): every run is a job; lock = thread id, so one run per thread,
in order.

`make_job_queue` picks the implementation from DATABASE_URL: procrastinate on PostgreSQL (`quantdesk worker`
processes on any number of hosts, plus one beside `serve` unless `--no-worker`), an in-process executor on the
embedded SQLite default (and always for the console). The core calls `submit_text` / `submit_decision` / `abort`;
the background service calls `requeue_unqueued`; the runner checks `should_stop()` between nodes."""

from __future__ import annotations

import logging

from sqlalchemy import Engine

from bot.jobs.base import (
    RUNS_QUEUE,
    JobHandler,
    JobQueue,
    WorkerHandle,
    runs_queue,
    should_stop,
    stop_honoured,
)
from bot.jobs.inbox import Inbox, Message
from tools.settings import Settings
from tools.storage.db import is_sqlite

log = logging.getLogger(__name__)

__all__ = ["RUNS_QUEUE", "Inbox", "JobHandler", "JobQueue", "Message", "WorkerHandle", "make_job_queue", "runs_queue",
           "should_stop", "start_serve_worker", "stop_honoured"]


def make_job_queue(engine: Engine, settings: Settings, scope: str = "") -> JobQueue:
    """The queue for the engine's database: PgJobQueue on PostgreSQL, LocalJobQueue on SQLite. `scope`: the
    thread-id prefix of the surface it serves."""
    if is_sqlite(engine.url.render_as_string(hide_password=False)):
        from bot.jobs.local import LocalJobQueue

        return LocalJobQueue(engine, settings, scope)
    from bot.jobs.pg import PgJobQueue, connection_budget

    connection_budget(engine, settings)  # logs a warning when the pools could exceed max_connections
    return PgJobQueue(engine, settings, scope)


def start_serve_worker(queue: JobQueue, handler: JobHandler) -> WorkerHandle | None:
    """The worker `serve` runs itself. SQLite: the in-process executor, always (jobs run nowhere else).
    PostgreSQL: a `quantdesk worker` child process (bot/jobs/child.py says why not threads), unless
    `serve --no-worker` / QUANTDESK_IN_PROCESS_WORKER=false (then `quantdesk worker` processes run the jobs). The
    child runs the queue's surface (its scope)."""
    if is_sqlite(queue.engine.url.render_as_string(hide_password=False)):
        return queue.start_worker(handler)
    if queue.settings.in_process_worker:
        from bot.jobs.child import ChildWorker

        return ChildWorker(queue.scope)
    log.info("no worker in this process: `quantdesk worker` processes run the jobs")
    return None
