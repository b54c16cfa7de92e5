"""Waiting for a condition, with a deadline: the one polling loop of the tests and benches. A test waits for what
it depends on, never for a length of time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(check: Callable[[], T], what: str, timeout: float = 60.0, *, interval: float = 0.05,
               gone: Callable[[], str | None] | None = None, seen: Callable[[], object] | None = None) -> T:
    """Poll `check` until it returns something truthy, and return that. Fail (AssertionError) after `timeout`
    seconds saying `what` and, if given, what `seen()` shows; fail at once when `gone()` names why the awaited
    thing can no longer happen (a child process that exited)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        reason = gone() if gone else None
        if reason:
            raise AssertionError(f"{reason} before {what}")
        if time.monotonic() >= deadline:
            shown = f"; seen: {seen()}" if seen else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{shown}")
        time.sleep(interval)
