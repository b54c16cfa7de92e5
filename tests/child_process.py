"""Waiting on a child process the crash tests will SIGKILL."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest


def wait_for_child(condition: Callable[[], bool], what: str, child: subprocess.Popen[bytes], log: Path,
                   deadline_seconds: float) -> None:
    """Poll `condition` until it holds; fail at once if the child died first, or at the deadline."""
    deadline = time.monotonic() + deadline_seconds
    while not condition():
        if child.poll() is not None:
            pytest.fail(f"the child exited ({child.returncode}) before {what}:\n{log.read_text()}")
        if time.monotonic() > deadline:
            pytest.fail(f"the child did not reach {what} within {deadline_seconds:.0f} s:\n{log.read_text()}")
        time.sleep(0.05)
