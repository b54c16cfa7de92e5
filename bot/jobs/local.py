"""The in-process executor of the embedded SQLite default (one host by nature).

Jobs wait in one FIFO per thread; a thread with waiting jobs and none running is "ready", and ready threads
wait in arrival order. A worker thread only ever takes a ready thread's first job, so a thread runs one job at
a time in arrival order, and no worker blocks behind a busy thread: a burst into one thread does not delay
another. The queue lives in memory; the inbox and the decisions table are the durable record, so after a
restart `start_worker` re-enqueues unfinished messages and the background service re-submits unapplied decisions."""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from bot.jobs.base import (
    APPLY_DECISION,
    RUN_TEXT,
    STOP_SHUTDOWN,
    STOP_USER,
    JobHandler,
    JobQueue,
    WorkerHandle,
    apply_decision_job,
    run_text_job,
    stop_scope,
)
from bot.jobs.inbox import Message
from tools.settings import Settings
from tools.storage.models import utcnow

log = logging.getLogger(__name__)


@dataclass
class _Job:
    thread_id: str
    task: str
    args: dict[str, Any]
    stop: str | None = field(default=None)  # set by abort() or shutdown: the job stops at its next node
    order: int = 0  # when it was queued, among this process's jobs

    def stop_reason(self) -> str | None:
        return self.stop


class LocalJobQueue(JobQueue):
    def __init__(self, engine: Engine, settings: Settings, scope: str = "") -> None:
        super().__init__(engine, settings, scope)
        self._created_at = utcnow()
        self._cond = threading.Condition()
        self._waiting: dict[str, deque[_Job]] = {}  # thread id -> its jobs not started yet, in arrival order
        self._ready: deque[str] = deque()  # threads with waiting jobs and none running, in the order they got ready
        self._running: dict[str, _Job] = {}
        self._closed = False
        self._order = itertools.count()

    def _enqueue_recorded(self, message: Message) -> bool:
        with self.engine.begin() as connection:
            if not self.inbox.claim(connection, message.key):
                return False
        self._put(_Job(message.thread_id, RUN_TEXT, message.payload()))
        return True

    def submit_decision(self, interrupt_id: str, thread_id: str) -> bool:
        with self._cond:
            running = self._running.get(thread_id)
            jobs = [*self._waiting.get(thread_id, ()), *([running] if running else [])]
            if any(j.task == APPLY_DECISION and j.args["interrupt_id"] == interrupt_id for j in jobs):
                return False
            self._put_locked(_Job(thread_id, APPLY_DECISION, {"interrupt_id": interrupt_id, "thread_id": thread_id}))
        return True

    def ahead_of(self, key: str) -> int | None:
        with self._cond:
            waiting = [job for jobs in self._waiting.values() for job in jobs]
            mine = next((job for job in waiting if job.task == RUN_TEXT and job.args.get("key") == key), None)
            if mine is None or mine.thread_id in self._running or self._waiting[mine.thread_id][0] is not mine:
                return None  # started, or behind its own thread's job (not a slot)
            return sum(job.order < mine.order for job in waiting)

    def abort(self, thread_id: str) -> bool:
        with self._cond:
            job = self._running.get(thread_id)
            if job is None:
                return False
            job.stop = STOP_USER
        log.info("abort requested for the running job of thread %s", thread_id)
        return True

    def start_worker(self, handler: JobHandler, concurrency: int | None = None) -> WorkerHandle:
        """Start the worker threads, after re-enqueueing the messages a previous process left unfinished."""
        released = self.inbox.release_unfinished(self._created_at)
        requeued = self.requeue_unqueued(older_than=0)
        if released or requeued:
            log.info("re-enqueued %d unfinished message(s) from before this start", requeued)
        count = concurrency or self.settings.job_concurrency
        threads = [threading.Thread(target=self._work, args=(handler,), name=f"quantdesk-job-{i}", daemon=True)
                   for i in range(count)]
        for thread in threads:
            thread.start()
        log.info("in-process job executor: %d worker thread(s)", count)
        return _LocalWorker(self, threads)

    # --- the executor ------------------------------------------------------------------------------------------

    def _put(self, job: _Job) -> None:
        with self._cond:
            self._put_locked(job)

    def _put_locked(self, job: _Job) -> None:
        job.order = next(self._order)
        waiting = self._waiting.setdefault(job.thread_id, deque())
        waiting.append(job)
        if len(waiting) == 1 and job.thread_id not in self._running:
            self._ready.append(job.thread_id)
            self._cond.notify()

    def _take(self) -> _Job | None:
        """The first job of the longest-ready idle thread; None when the executor is closing."""
        with self._cond:
            while not self._ready and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            thread_id = self._ready.popleft()
            job = self._waiting[thread_id].popleft()
            if not self._waiting[thread_id]:
                del self._waiting[thread_id]
            self._running[thread_id] = job
            return job

    def _finish(self, job: _Job) -> None:
        with self._cond:
            del self._running[job.thread_id]
            if job.thread_id in self._waiting:
                self._ready.append(job.thread_id)
            self._cond.notify_all()  # a worker for the ready thread, and anyone in wait_idle

    def wait_idle(self, thread_id: str) -> None:
        """Block until the thread has no job waiting or running (the console waits for its request's run)."""
        with self._cond:
            while not self._closed and (thread_id in self._running or thread_id in self._waiting):
                self._cond.wait()

    def _work(self, handler: JobHandler) -> None:
        inbox = self.inbox
        while (job := self._take()) is not None:
            try:
                with stop_scope(job.stop_reason):
                    if job.task == RUN_TEXT:
                        run_text_job(handler, inbox, job.args)
                    else:
                        apply_decision_job(handler, job.args)
            except Exception:  # noqa: BLE001 - one failed job must not stop the executor
                log.exception("job %s of thread %s failed", job.task, job.thread_id)
            finally:
                self._finish(job)

    def _close(self) -> None:
        with self._cond:
            self._closed = True
            for job in self._running.values():
                job.stop = STOP_SHUTDOWN
            self._cond.notify_all()


class _LocalWorker(WorkerHandle):
    def __init__(self, queue: LocalJobQueue, threads: list[threading.Thread]) -> None:
        self.queue, self.threads = queue, threads

    def stop(self, timeout: float = 60.0) -> None:
        """Ask running jobs to stop at their next node; waiting jobs stay in the inbox for the next start."""
        self.queue._close()
        for thread in self.threads:
            thread.join(timeout)
