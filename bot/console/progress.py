"""The console's progress line (issue 39, item 13): on a terminal, the step a run is at and how long it has been
running, one line rewritten in place every second and wiped before anything else is printed. Off a terminal (piped
output) it draws nothing, so scripts read clean lines."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TextIO

from tools.i18n import _

CLEAR = "\r\x1b[2K"  # back to the line's start, the line erased


class ProgressLine:
    """The line of the runs in progress (the latest one shown); every method is called holding `lock`, the lock
    the console prints under, except the ticker's own redraw, which takes it."""

    TICK_S = 1.0

    def __init__(self, out: TextIO, lock: threading.Lock, clock: Callable[[], float] = time.monotonic) -> None:
        self.out, self.lock, self.clock = out, lock, clock
        self.runs: dict[str, tuple[str, float]] = {}  # thread id -> (its step, when its run started)
        self.drawn = False
        self._ticker: threading.Thread | None = None

    def show(self, thread_id: str, step: str) -> None:
        """`thread_id`'s run is at `step` ("" before its first step); it becomes the line shown."""
        started = self.runs.pop(thread_id, (step, self.clock()))[1]
        self.runs[thread_id] = (step, started)
        self.redraw()
        if self._ticker is None or not self._ticker.is_alive():
            self._ticker = threading.Thread(target=self._tick, name="console-progress", daemon=True)
            self._ticker.start()

    def stop(self, thread_id: str) -> None:
        """`thread_id`'s run has ended: the line shows the run before it, or goes."""
        if self.runs.pop(thread_id, None) is not None:
            self.clear()
            self.redraw()

    def clear(self) -> None:
        if self.drawn:
            self.out.write(CLEAR)
            self.out.flush()
            self.drawn = False

    def redraw(self) -> None:
        if not self.runs:
            return
        step, started = next(reversed(self.runs.values()))
        seconds = int(self.clock() - started)
        line = _("⏳ {step} · {seconds} s").format(step=step or _("working"), seconds=seconds)
        self.out.write(CLEAR + line)
        self.out.flush()
        self.drawn = True

    def _tick(self) -> None:
        while True:
            time.sleep(self.TICK_S)  # the line's own refresh period, not a wait for something to happen
            with self.lock:
                if not self.runs:
                    return
                self.redraw()
