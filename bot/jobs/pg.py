"""The job queue on PostgreSQL: procrastinate 3.10 (its schema is installed by migration 0006).

Every job of a thread is deferred with `lock=<thread id>` and the same priority, so jobs of one thread run one
at a time in job-id (arrival) order, and a worker never fetches a job whose thread is busy. Each surface has a queue
of its own (`runs_queue(scope)`: `runs-slack`, `runs-feishu`), so Slack's and Feishu's processes on one database never
run each other's jobs. Deferring happens on the application engine's connection, in the transaction that marks the
inbox row enqueued. A finished job does not wake the next job of its lock, so workers poll every
QUANTDESK_JOB_POLL_INTERVAL seconds. A job can be left "doing" with its lock held: its worker died (SIGKILL), or its
outcome could not be written (PostgreSQL restarting at that moment) and procrastinate's worker never tries again.
Every worker runs a reaper (`Reaper`) that retries both kinds in its queue."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from procrastinate import App, JobContext, PsycopgConnector, RetryStrategy
from procrastinate.exceptions import JobAborted
from procrastinate.job_context import AbortReason
from procrastinate.jobs import Job, Status
from procrastinate.retry import RetryDecision
from procrastinate.utils import utcnow
from procrastinate.worker import Worker
from sqlalchemy import Connection, Engine, QueuePool, text

from bot.jobs.base import (
    APPLY_DECISION,
    RUN_TEXT,
    RUNS_QUEUE,
    STOP_SHUTDOWN,
    STOP_USER,
    JobHandler,
    JobQueue,
    WorkerHandle,
    apply_decision_job,
    run_text_job,
    runs_queue,
    stop_scope,
)
from bot.jobs.failures import RETRIED_ERRORS, attempt_scope
from bot.jobs.inbox import Message
from tools.settings import Settings
from tools.storage.db import libpq_url

log = logging.getLogger(__name__)

RUN_PRIORITY = 0  # one priority for every job of a thread: a higher one would jump ahead within the lock
MAX_ATTEMPTS = 5  # a job whose worker died this many times is failed, not retried (it may be what kills them)
ABORT_POLL_SECONDS = 1.0  # fallback only: abort requests arrive by LISTEN/NOTIFY
SHUTDOWN_GRACE_SECONDS = 30.0  # then running jobs are asked to stop at their next node, and are retried
REAPER_LOCK = "quantdesk-reaper"  # with the queue's name, the advisory lock of a pass: one at a time across hosts
RETRIES = 7  # after a database or network failure, at 2, 4, 8 … 128 s: the run's last attempt is the eighth


class RunRetry(RetryStrategy):
    """Procrastinate's retry strategy for database and network failures (RETRIED_ERRORS: connection and
    serialization errors), with exponential backoff; and a job a stopping worker asked to stop is retried at once,
    however often (a user's abort is not: procrastinate skips retries for it)."""

    def get_retry_decision(self, *, exception: BaseException, job: Job) -> RetryDecision | None:
        if isinstance(exception, JobAborted):
            return RetryDecision(retry_in={"seconds": 0})
        return super().get_retry_decision(exception=exception, job=job)


RUN_RETRY = RunRetry(max_attempts=RETRIES, exponential_wait=2, retry_exceptions=list(RETRIED_ERRORS))


# The listener's path: the inbox row (marked enqueued) and its job in one statement, nothing deferred when the key was
# recorded before. The job goes through procrastinate's own SQL API, the versioned function and row type its
# `defer_jobs` query calls, with scalar parameters: procrastinate's Python defer dumps the row as an escaped text
# array, which was most of the listener's CPU time (bench/slack_scale).
_RECORD_AND_DEFER = """
WITH recorded AS (
    INSERT INTO inbox (key, thread_id, payload, received_at, enqueued_at)
    VALUES (%(key)s, %(thread_id)s, %(args)s::json, %(now)s, %(now)s)
    ON CONFLICT (key) DO NOTHING
    RETURNING key)
SELECT unnest(procrastinate_defer_jobs_v1(ARRAY[
    ROW(%(queue)s, %(task)s, %(priority)s, %(lock)s, NULL, %(args)s::jsonb, NULL)::procrastinate_job_to_defer_v1]))
FROM recorded
"""


def _stop_reason(context: JobContext) -> str | None:
    reason = context.abort_reason()
    if reason is None:
        return None
    return STOP_SHUTDOWN if reason == AbortReason.SHUTDOWN else STOP_USER


def _run_text_task(context: JobContext, **args: Any) -> None:
    with stop_scope(lambda: _stop_reason(context)), attempt_scope(context.job.attempts >= RETRIES):
        run_text_job(context.additional_context["handler"], context.additional_context["inbox"], args)
    if context.should_abort():
        raise JobAborted


def _apply_decision_task(context: JobContext, **args: Any) -> None:
    with stop_scope(lambda: _stop_reason(context)), attempt_scope(context.job.attempts >= RETRIES):
        apply_decision_job(context.additional_context["handler"], args)
    if context.should_abort():
        raise JobAborted


def make_app(conninfo: str, pool_size: int, queue: str = RUNS_QUEUE) -> App:
    """A procrastinate App with the two tasks on `queue`; its pool opens only when a worker opens the app."""
    app = App(connector=PsycopgConnector(conninfo=conninfo, min_size=1, max_size=pool_size))
    for name, func in ((RUN_TEXT, _run_text_task), (APPLY_DECISION, _apply_decision_task)):
        app.task(name=name, queue=queue, pass_context=True, retry=RUN_RETRY, priority=RUN_PRIORITY)(func)
    return app


def _driver(connection: Connection) -> Any:
    """The psycopg connection under a SQLAlchemy connection (same transaction), for procrastinate's queries."""
    return connection.connection.driver_connection


class PgJobQueue(JobQueue):
    def __init__(self, engine: Engine, settings: Settings, scope: str = "") -> None:
        super().__init__(engine, settings, scope)
        self.queue = runs_queue(scope)  # its jobs' procrastinate queue: its workers run no other surface's
        self.conninfo = libpq_url(engine.url.render_as_string(hide_password=False))
        self.app = make_app(self.conninfo, settings.job_pool_size, self.queue)  # for deferring: never opened here
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")

    def _defer(self, connection: Connection, task: str, thread_id: str, args: dict[str, Any]) -> int:
        deferrer = self.app.configure_task(task, lock=thread_id, queue=self.queue, priority=RUN_PRIORITY,
                                           connection=_driver(connection))
        return deferrer.defer(**args)

    def submit_text(self, message: Message) -> bool:
        """Record the message marked enqueued and defer its job in one statement (one round trip on the listener's
        path, committed on its own). When that fails, the row is recorded alone, for `requeue_unqueued`."""
        payload = message.payload()
        try:
            with self._autocommit.connect() as connection:
                deferred = connection.exec_driver_sql(_RECORD_AND_DEFER, {
                    "key": message.key, "thread_id": message.thread_id, "args": json.dumps(payload), "now": utcnow(),
                    "queue": self.queue, "task": RUN_TEXT, "priority": RUN_PRIORITY, "lock": message.thread_id,
                }).first()
            return deferred is not None
        except Exception:  # noqa: BLE001 - recorded alone below; the background service's requeue enqueues it
            log.warning("recording and enqueueing message %s failed; recording it alone", message.key, exc_info=True)
        return self.inbox.record(message.key, message.thread_id, payload)

    def _enqueue_recorded(self, message: Message) -> bool:
        with self.engine.begin() as connection:
            if not self.inbox.claim(connection, message.key):
                return False
            self._defer(connection, RUN_TEXT, message.thread_id, message.payload())
        return True

    def submit_decision(self, interrupt_id: str, thread_id: str) -> bool:
        with self.engine.begin() as connection:
            connection.execute(text("SELECT pg_advisory_xact_lock(hashtext(:lock))"), {"lock": thread_id})
            pending = connection.execute(text(
                "SELECT 1 FROM procrastinate_jobs WHERE lock = :lock AND task_name = :task "
                "AND status IN ('todo', 'doing') AND args->>'interrupt_id' = :interrupt_id LIMIT 1"),
                {"lock": thread_id, "task": APPLY_DECISION, "interrupt_id": interrupt_id}).first()
            if pending is not None:
                return False
            self._defer(connection, APPLY_DECISION, thread_id, {"interrupt_id": interrupt_id, "thread_id": thread_id})
        return True

    def ahead_of(self, key: str) -> int | None:
        with self.engine.connect() as connection:
            row = connection.execute(text(
                "SELECT mine.status, (SELECT count(*) FROM procrastinate_jobs ahead WHERE ahead.queue_name = :queue "
                "AND ahead.status = 'todo' AND ahead.id < mine.id), EXISTS (SELECT 1 FROM procrastinate_jobs other "
                "WHERE other.lock = mine.lock AND (other.status = 'doing' OR other.status = 'todo' AND other.id < "
                "mine.id)) FROM (SELECT id, status, lock FROM procrastinate_jobs WHERE task_name = :task "
                "AND args->>'key' = :key ORDER BY id DESC LIMIT 1) mine"),
                {"queue": self.queue, "task": RUN_TEXT, "key": key}).first()
        if row is None or row[0] != "todo" or row[2]:  # started, or behind its own thread's job (not a slot)
            return None
        return int(row[1])

    def abort(self, thread_id: str) -> bool:
        with self.engine.begin() as connection:
            running = connection.execute(text(
                "SELECT id FROM procrastinate_jobs WHERE lock = :lock AND status = 'doing' AND queue_name = :queue"),
                {"lock": thread_id, "queue": self.queue}).scalars().all()
            requested = [job_id for job_id in running
                         if self.app.job_manager.cancel_job_by_id(job_id, abort=True, connection=_driver(connection))]
        if requested:
            log.info("abort requested for job(s) %s of thread %s", requested, thread_id)
        return bool(requested)

    # --- workers -----------------------------------------------------------------------------------------------

    def start_worker(self, handler: JobHandler, concurrency: int | None = None) -> WorkerHandle:
        return _ThreadWorker(self, handler, concurrency or self.settings.job_concurrency)

    def run_worker(self, handler: JobHandler, concurrency: int | None = None) -> None:
        """Run a worker in the foreground until SIGINT/SIGTERM (`quantdesk worker`)."""
        asyncio.run(self.serve(handler, concurrency or self.settings.job_concurrency, install_signal_handlers=True))

    async def serve(self, handler: JobHandler, concurrency: int, *, install_signal_handlers: bool) -> None:
        """A procrastinate worker on this queue and its reaper, on the running event loop, until cancelled."""
        settings = self.settings
        loop = asyncio.get_running_loop()
        # sync tasks run on the loop's default executor: one thread per job slot, or a job would sit "doing"
        loop.set_default_executor(ThreadPoolExecutor(concurrency + 1, thread_name_prefix="quantdesk-job"))
        app = make_app(self.conninfo, settings.job_pool_size, self.queue)
        async with app.open_async():
            worker = TrackedWorker(
                app, queues=[self.queue], name=f"quantdesk@{socket.gethostname()}:{os.getpid()}",
                concurrency=concurrency, fetch_job_polling_interval=settings.job_poll_interval,
                abort_job_polling_interval=ABORT_POLL_SECONDS, listen_notify=True, delete_jobs="successful",
                additional_context={"handler": handler, "inbox": self.inbox},
                install_signal_handlers=install_signal_handlers,
                update_heartbeat_interval=settings.job_stalled_timeout / 3,
                stalled_worker_timeout=settings.job_stalled_timeout,
                shutdown_graceful_timeout=SHUTDOWN_GRACE_SECONDS)
            reaper = Reaper(app, self.scope, settings.job_stalled_timeout, worker)
            reaping = asyncio.create_task(reaper.forever(), name="quantdesk-reaper")
            try:
                await worker.run()
            finally:
                reaping.cancel()
                await asyncio.gather(reaping, return_exceptions=True)


class _ThreadWorker(WorkerHandle):
    """A procrastinate worker on an event loop of its own, in a background thread of this process."""

    def __init__(self, queue: PgJobQueue, handler: JobHandler, concurrency: int) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(queue, handler, concurrency),
                                        name="quantdesk-worker", daemon=True)
        self._thread.start()
        self._started.wait()
        log.info("in-process procrastinate worker: concurrency %d", concurrency)

    def _main(self, queue: PgJobQueue, handler: JobHandler, concurrency: int) -> None:
        async def run() -> None:
            self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
            self._started.set()
            await queue.serve(handler, concurrency, install_signal_handlers=False)

        try:
            asyncio.run(run())
        except asyncio.CancelledError:
            log.info("in-process worker stopped")
        except Exception:
            log.exception("in-process worker failed")
        finally:
            self._started.set()

    def stop(self, timeout: float = 60.0) -> None:
        """Stop fetching; running jobs get SHUTDOWN_GRACE_SECONDS, then stop at their next node and are retried."""
        if self._loop is not None and self._task is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed in between
                self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(timeout)


class TrackedWorker(Worker):
    """procrastinate's worker, saying which of its jobs it runs now: from fetching one until its outcome is written
    or failed to be."""

    def running_job_ids(self) -> set[int]:
        return {context.job.id for context in self._running_jobs.values() if context.job.id is not None}


class Reaper:
    """Beside a worker of the scope's queue, a pass every `timeout / 2` seconds (one pass at a time across hosts, per
    queue) that retries jobs left "doing", freeing their thread's lock:
    - the jobs of workers without a heartbeat for `timeout` seconds, or pruned (a worker killed mid-job); one that
      already lost MAX_ATTEMPTS workers is failed instead;
    - the jobs "doing" under its own worker that the worker does not run, seen so on two passes in a row (not one
      just fetched): their outcome could not be written (procrastinate's worker raises and never tries again), and
      the worker's heartbeat keeps them from the first kind.
    A scoped queue's reaper also takes in its scope's jobs left in the unscoped RUNS_QUEUE (deferred before each
    surface had a queue of its own), which no worker would run any more."""

    def __init__(self, app: App, scope: str, timeout: float, worker: TrackedWorker) -> None:
        self.app, self.scope, self.timeout, self.worker = app, scope, timeout, worker
        self.queue = runs_queue(scope)
        self._unowned: set[int] = set()  # ids the last pass saw "doing" under the worker and not run by it

    async def forever(self) -> None:
        """A pass now and every `timeout / 2` seconds; a failed pass is logged and the next one tried."""
        while True:
            try:
                await self.run_pass()
            except Exception:
                log.exception("stalled-job reaper pass failed")
            await asyncio.sleep(self.timeout / 2)

    async def run_pass(self) -> list[int]:
        """One pass; the ids of the jobs it retried or failed (none when another host's pass holds the queue)."""
        connector = self.app.connector
        assert isinstance(connector, PsycopgConnector)  # make_app's: procrastinate types it as the base connector
        async with connector.pool.connection() as connection, connection.transaction():
            cursor = await connection.execute("SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))",
                                              (f"{REAPER_LOCK}:{self.queue}",))
            row = await cursor.fetchone()
            if not row or not row[0]:
                return []
            if self.queue != RUNS_QUEUE:
                cursor = await connection.execute(
                    "UPDATE procrastinate_jobs SET queue_name = %s WHERE queue_name = %s AND starts_with(lock, %s)",
                    (self.queue, RUNS_QUEUE, self.scope))
                if cursor.rowcount:
                    log.info("moved %d job(s) of %s threads from queue %s to %s", cursor.rowcount, self.scope,
                             RUNS_QUEUE, self.queue)
            return [*await self._reap_stalled(), *await self._retry_unowned()]

    async def _reap_stalled(self) -> list[int]:
        reaped = []
        for job in await self.app.job_manager.get_stalled_jobs(queue=self.queue, seconds_since_heartbeat=self.timeout):
            assert job.id is not None
            if job.attempts + 1 >= MAX_ATTEMPTS:
                log.error("job %s (%s, thread %s) lost its worker %d times; failing it", job.id, job.task_name,
                          job.lock, job.attempts + 1)
                await self.app.job_manager.finish_job_by_id_async(job.id, status=Status.FAILED, delete_job=False)
            else:
                log.warning("job %s (%s, thread %s) lost its worker (no heartbeat for %.0f s); retrying it",
                            job.id, job.task_name, job.lock, self.timeout)
                await self.app.job_manager.retry_job_by_id_async(job.id, retry_at=utcnow())
            reaped.append(job.id)
        return reaped

    async def _retry_unowned(self) -> list[int]:
        worker_id = self.worker.worker_id
        if worker_id is None:  # not registered yet, or unregistered
            self._unowned = set()
            return []
        running = self.worker.running_job_ids()
        doing = await self.app.job_manager.list_jobs_async(status=Status.DOING.value, worker_id=worker_id)
        running |= self.worker.running_job_ids()  # a job it fetched or ended while the list was read
        unowned = {job.id for job in doing if job.id is not None} - running
        confirmed, self._unowned = unowned & self._unowned, unowned - self._unowned
        retried = []
        for job in doing:
            if job.id in confirmed:
                log.warning("job %s (%s, thread %s) is doing under this worker, which does not run it (its outcome "
                            "was not written); retrying it", job.id, job.task_name, job.lock)
                await self.app.job_manager.retry_job_by_id_async(job.id, retry_at=utcnow())
                retried.append(job.id)
        return retried


def connection_budget(engine: Engine, settings: Settings) -> tuple[int, int, str | None]:
    """(connections all processes may open, the server's max_connections, a warning when the first exceeds the
    second). Per process: the job pool, procrastinate's LISTEN connection, the app engine's pool and overflow,
    and the checkpointer pool."""
    pool = engine.pool
    assert isinstance(pool, QueuePool)  # a PostgreSQL engine's: the base Pool has no size
    app_pool = pool.size() + getattr(pool, "_max_overflow", 0)
    per_process = settings.job_pool_size + 1 + app_pool + settings.checkpoint_pool_size
    total = per_process * settings.job_processes
    with engine.connect() as connection:
        max_connections = int(connection.exec_driver_sql("SHOW max_connections").scalar_one())
    warning = None
    if total > max_connections:
        warning = (f"QUANTDESK_JOB_PROCESSES={settings.job_processes} processes x {per_process} connections each "
                   f"(job pool {settings.job_pool_size} + listener 1 + app pool {app_pool} + checkpointer "
                   f"{settings.checkpoint_pool_size}) = {total} exceeds the server's max_connections="
                   f"{max_connections}; lower QUANTDESK_JOB_POOL_SIZE / QUANTDESK_CHECKPOINT_POOL_SIZE or raise "
                   "max_connections")
        log.warning(warning)
    return total, max_connections, warning
