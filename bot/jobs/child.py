"""The worker `quantdesk serve` runs beside itself on PostgreSQL: a `quantdesk worker` child process, not threads.

A run is CPU work in Python (pandas, the sandbox's host side, LangGraph), and in the listener's process it
competes with the listener for the GIL: measured with 200 mentions at once, the ack p99 went from ~110 ms
(listener alone) to 250–360 ms with the worker's threads beside it, and Slack retries events not acked in 3 s.
A child process has a GIL of its own, and it runs at a lower CPU priority (`CHILD_NICENESS`), so on a busy host the
listener's acks come first and the runs take the rest. It runs the jobs of `serve`'s surface (`--surface`: its queue,
whatever else the environment configures). It stops with `serve` (SIGTERM, or on its own when `serve` is gone, even
after a SIGKILL) and is restarted if it dies while `serve` runs."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time

from bot.jobs.base import WorkerHandle
from bot.surfaces import SURFACES

log = logging.getLogger(__name__)

RESTART_DELAY_SECONDS = 5.0  # after the child died on its own, before starting another
PARENT_CHECK_SECONDS = 1.0  # how often a child checks that its `serve` is still there
CHILD_NICENESS = 10  # added to the child's niceness: the listener beside it gets the CPU first


def worker_command(scope: str) -> list[str]:
    """The command of the worker child of a `serve` whose queue has `scope`: `quantdesk worker --parent <this pid>
    --surface <the scope's surface>`."""
    (surface,) = (entry.name for entry in SURFACES if entry.scope == scope)
    return [sys.executable, "-m", "bot.cli", "worker", "--parent", str(os.getpid()), "--surface", surface]


class ChildWorker(WorkerHandle):
    """The worker child process of the surface whose scope is `scope` (its output goes to this process's stderr, so
    stdout keeps only `serve`'s own lines), restarted when it dies unasked."""

    def __init__(self, scope: str) -> None:
        self._command = worker_command(scope)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._proc = self._spawn()
        self._watcher = threading.Thread(target=self._watch, name="quantdesk-worker-child", daemon=True)
        self._watcher.start()

    def _spawn(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(self._command, stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=sys.stderr)
        log.info("worker child process %d started", proc.pid)
        return proc

    def _watch(self) -> None:
        while True:
            with self._lock:
                proc = self._proc
            code = proc.wait()
            if self._stopping.is_set():
                return
            log.error("worker child process %d exited with %s; starting another in %.0f s", proc.pid, code,
                      RESTART_DELAY_SECONDS)
            if self._stopping.wait(RESTART_DELAY_SECONDS):
                return
            with self._lock:  # stop() sets _stopping under this lock: never start a child after it
                if self._stopping.is_set():
                    return
                self._proc = self._spawn()

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM: the worker stops fetching and lets running jobs reach a node boundary (they are retried)."""
        with self._lock:
            self._stopping.set()
            proc = self._proc
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("worker child process %d did not stop in %.0f s; killing it", proc.pid, timeout)
                proc.kill()
                proc.wait()
        self._watcher.join(timeout)


def exit_with_parent(parent_pid: int) -> None:
    """In the child: yield the CPU to `serve`'s listener (a lower priority, which its sandbox workers inherit), and
    SIGTERM itself (a graceful worker shutdown) once `parent_pid` is no longer its parent."""
    os.nice(CHILD_NICENESS)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_CHECK_SECONDS)
        log.warning("serve (pid %d) is gone; stopping this worker", parent_pid)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="quantdesk-parent-watch", daemon=True).start()
