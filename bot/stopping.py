"""SIGTERM, a service manager's stop, ends `serve` gracefully: the listener stops taking requests and finishes the
ones it has, then `serve`'s own clean-up stops its worker child (whose running jobs reach a node boundary; what is
cut short is retried). A second SIGTERM ends the process at once."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType


def stop_on_sigterm(stop: Callable[[], None]) -> None:
    """On SIGTERM call `stop()` (which makes the main thread's serving loop return). Only the main thread can take
    signals: elsewhere (a listener run inside a test) nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(_signum: int, _frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the next one ends the process
        stop()

    signal.signal(signal.SIGTERM, handler)


def leave() -> None:
    """A `stop` for a serving loop that returns only by an exception (a client's `start()` that runs forever)."""
    raise SystemExit(0)
