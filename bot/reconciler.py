"""The reconciler: queues again accepted decisions that were never applied (a crash, a database or network
error) and messages recorded but never queued, and re-posts questions and results Slack refused. It runs at
start-up and then every few seconds; decisions are claimed row by row when applied, so several processes can
run one without applying anything twice."""

from __future__ import annotations

import logging
import threading
import time
from typing import Protocol

from bot.decisions import DecisionStore, PostStore
from bot.jobs import JobQueue

log = logging.getLogger(__name__)

INTERVAL_SECONDS = 5.0  # at most 10 s between passes (ARCHITECTURE §7)
SETTLE_SECONDS = 60.0  # between the settle and periodic passes (each may read the data provider)


class Applier(Protocol):
    """What the reconciler drives: the front door (Slack) or any adapter that applies and re-posts."""

    decisions: DecisionStore
    posts: PostStore
    queue: JobQueue

    def reapply(self, interrupt_id: str, thread_id: str) -> None: ...

    def repost(self, key: str) -> None: ...

    def settle(self) -> None: ...

    def run_passes(self) -> None: ...

    def schedule_rules(self) -> None: ...


class Reconciler:
    def __init__(self, door: Applier, interval: float = INTERVAL_SECONDS) -> None:
        self.door = door
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._settled_at: float | None = None

    def run_once(self) -> None:
        """One pass: every due decision and every unqueued message back on the queue, then every post without
        a message; the scheduler pass of saved rules; about once a minute, the workflows' periodic passes (such as
        resolving the desk's due decisions) and the paper account's settle job."""
        for decision in self.door.decisions.due():
            self.door.reapply(decision.interrupt_id, decision.thread_id)
        self.door.queue.requeue_unqueued()
        for post in self.door.posts.unposted():
            try:
                self.door.repost(post.key)
            except Exception:  # noqa: BLE001 - Slack or the database is down: the post stays for the next pass
                log.warning("re-posting %s failed; will try again", post.key, exc_info=True)
        try:
            self.door.schedule_rules()
        except Exception:  # noqa: BLE001 - the settle job below must still run
            log.exception("the scheduler pass failed; it runs again next pass")
        now = time.monotonic()
        if self._settled_at is None or now - self._settled_at >= SETTLE_SECONDS:
            self._settled_at = now
            self.door.run_passes()  # catches and logs its own failures, so the settle job always runs
            self.door.settle()

    def start(self) -> None:
        """Run a pass now and then every `interval` seconds, in a daemon thread, until `stop()`."""
        self._thread = threading.Thread(target=self._loop, name="quantdesk-reconciler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # noqa: BLE001 - the loop must survive a database outage
                log.exception("reconciler pass failed")
            self._stop.wait(self.interval)
