"""What both job queues share: the job payloads, the handler they call, the job functions and the stop check.

A job is one message (`run_text`) or one accepted decision (`apply_decision`). Its lock is the LangGraph
thread id, so a thread runs one job at a time, in arrival order. The job functions below are the same for
procrastinate (PostgreSQL) and the in-process executor (SQLite); they call the handler the worker was started
with, which builds the bot's context in the worker's own process."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from sqlalchemy import Engine

from bot.jobs.failures import RETRIED_ERRORS
from bot.jobs.inbox import Inbox, Message
from tools.settings import Settings

log = logging.getLogger(__name__)

RUNS_QUEUE = "runs"  # runs of threads (each surface's: runs_queue); long batch work would get a queue of its own
RUN_TEXT = "quantdesk.run_text"
APPLY_DECISION = "quantdesk.apply_decision"
STOP_USER = "user"  # abort(thread_id): the thread's run stops at its next node and is not run again
STOP_SHUTDOWN = "shutdown"  # the worker is stopping: the run stops at its next node and is retried elsewhere
REQUEUE_AFTER_SECONDS = 5.0


def runs_queue(scope: str) -> str:
    """The queue of a surface's runs (`runs-slack` for scope `slack-`; RUNS_QUEUE unscoped): surfaces sharing a
    database share no queue, so a worker only ever runs its own surface's jobs."""
    return f"{RUNS_QUEUE}-{scope}".rstrip("-")


@runtime_checkable
class JobHandler(Protocol):
    """What a worker calls. Both methods must be idempotent: a job runs again after its worker died, so the
    handler dedupes decisions by their row and messages by their inbox row / checkpoint."""

    def run_text(self, message: Message) -> None: ...

    def apply_decision(self, interrupt_id: str, thread_id: str) -> None: ...


class WorkerHandle(ABC):
    """A worker running in this process (threads); `stop()` asks its jobs to stop at their next node."""

    @abstractmethod
    def stop(self, timeout: float = 60.0) -> None: ...


class JobQueue(ABC):
    """One queue for every run: record a message, then enqueue it; enqueue decisions; abort a thread's run."""

    def __init__(self, engine: Engine, settings: Settings, scope: str = "") -> None:
        """`scope`: the thread-id prefix of the surface this queue serves (see Inbox)."""
        self.engine = engine
        self.settings = settings
        self.scope = scope
        self.inbox = Inbox(engine, scope)

    def submit_text(self, message: Message) -> bool:
        """Record the message, then enqueue its job. False when its key was recorded before (a Slack retry, or
        app_mention and message for one post). An enqueue that fails leaves the row for `requeue_unqueued`."""
        if not self.inbox.record(message.key, message.thread_id, message.payload()):
            return False
        try:
            self._enqueue_recorded(message)
        except Exception:  # noqa: BLE001 - the row is durable: the background service's requeue_unqueued enqueues it
            log.warning("enqueueing message %s failed; it stays in the inbox for the background service", message.key,
                        exc_info=True)
        return True

    def requeue_unqueued(self, older_than: float = REQUEUE_AFTER_SECONDS) -> int:
        """Enqueue messages recorded more than `older_than` seconds ago but never enqueued (the process died or
        the queue failed in between); returns how many. Safe from several processes at once."""
        count = 0
        for message in self.inbox.unqueued(older_than):
            if self._enqueue_recorded(message):
                log.info("requeued message %s of thread %s", message.key, message.thread_id)
                count += 1
        return count

    def mark_done(self, key: str) -> None:
        self.inbox.mark_done(key)

    @abstractmethod
    def _enqueue_recorded(self, message: Message) -> bool:
        """Claim the recorded message for enqueueing and enqueue it; False when another caller claimed it."""

    @abstractmethod
    def submit_decision(self, interrupt_id: str, thread_id: str) -> bool:
        """Enqueue applying an accepted decision (its row is the durable record). False, enqueueing nothing, when
        a job for this decision is already waiting or running (the background service may call this every pass)."""

    @abstractmethod
    def ahead_of(self, key: str) -> int | None:
        """How many jobs wait to start before the message `key`'s, which waits for a free slot; None when it does
        not (it runs or ended, is not enqueued yet, or waits behind a job of its own thread)."""

    @abstractmethod
    def abort(self, thread_id: str) -> bool:
        """Ask the thread's running job to stop at its next node boundary, without waiting behind the thread's
        lock. False when nothing of the thread is running."""

    @abstractmethod
    def start_worker(self, handler: JobHandler, concurrency: int | None = None) -> WorkerHandle:
        """Run jobs in this process, in background threads, until the handle is stopped."""


# --- the stop check --------------------------------------------------------------------------------------------

@dataclass
class _Stop:
    reason: Callable[[], str | None]  # why the running job should stop (abort, shutdown), or None
    honoured: bool = False  # a node already stopped its own work for it


_stop: ContextVar[_Stop | None] = ContextVar("quantdesk_job_stop", default=None)


def should_stop() -> bool:
    """True when the job running on this thread was asked to stop (abort or shutdown) and no node has honoured the
    stop itself: the runner checks it between nodes and returns at the next boundary. Always False outside a job."""
    stop = _stop.get()
    return stop is not None and not stop.honoured and stop.reason() is not None


def stop_honoured() -> None:
    """A node ended its own work early for the stop and returns what it has (the desk's replay, after the date in
    progress): the run then goes on to its end, so its partial result is shown instead of a bare "Stopped"."""
    stop = _stop.get()
    if stop is not None:
        stop.honoured = True


def stop_reason() -> str | None:
    stop = _stop.get()
    return stop.reason() if stop is not None else None


@contextmanager
def stop_scope(reason: Callable[[], str | None]) -> Iterator[None]:
    token = _stop.set(_Stop(reason))
    try:
        yield
    finally:
        _stop.reset(token)


# --- the job functions (both queues) ---------------------------------------------------------------------------


def run_text_job(handler: JobHandler, inbox: Inbox, args: dict[str, Any]) -> None:
    """Run one message, after any message of its thread Slack posted earlier that is not done yet (replies ms
    apart can be enqueued out of order; the thread's jobs run one at a time, so this restores Slack's order and
    the earlier message's own job then finds it done). A row is marked done when its run ends (also when it
    failed or was aborted by a user), but not when the worker is shutting down or the database or network failed
    under it (RETRIED_ERRORS): then the job is retried."""
    message = Message(**args)
    for item in [*inbox.pending_before(message), message]:
        if stop_reason() == STOP_SHUTDOWN:
            return
        if inbox.is_done(item.key):
            log.info("message %s already done; skipped", item.key)
            continue
        try:
            handler.run_text(item)
        except RETRIED_ERRORS as exc:
            log.warning("message %s of thread %s met %s; its job is retried", item.key, item.thread_id,
                        type(exc).__name__)
            raise
        except BaseException:
            _mark_done(inbox, item.key)
            raise
        _mark_done(inbox, item.key)


def _mark_done(inbox: Inbox, key: str) -> None:
    if stop_reason() != STOP_SHUTDOWN:
        inbox.mark_done(key)


def apply_decision_job(handler: JobHandler, args: dict[str, Any]) -> None:
    handler.apply_decision(args["interrupt_id"], args["thread_id"])
