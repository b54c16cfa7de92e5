"""Word that a broker changed an order (a live broker's order or trade event): whoever listens (the background
service) brings the books up to date at once, instead of at its next settle pass."""

from __future__ import annotations

import threading
from collections.abc import Callable

_listeners: list[Callable[[], None]] = []
_lock = threading.Lock()


def listen(callback: Callable[[], None]) -> Callable[[], None]:
    """Call `callback` on each change (from the broker's own thread: it must return at once); returns what stops
    it."""
    with _lock:
        _listeners.append(callback)

    def stop() -> None:
        with _lock:
            if callback in _listeners:
                _listeners.remove(callback)

    return stop


def heard() -> None:
    """A broker reported an order or a trade."""
    with _lock:
        listeners = list(_listeners)
    for callback in listeners:
        callback()
