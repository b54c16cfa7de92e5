"""A child process the crash tests SIGKILL: started as `python -m MODULE ARGS` from the repository, watched until
it has reached the moment to kill it, then killed as a crash or an OOM kill would (no handler runs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


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


def kill_child_when(module: str, args: list[str], tmp_path: Path, moments: list[tuple[Callable[[], bool], str]],
                    deadline_seconds: float) -> None:
    """Run `python -m module args` (output in tmp_path/child.log), wait for each (condition, what) of `moments`
    in turn, then SIGKILL it and check it died of that signal; a child still alive on any failure is killed."""
    log = tmp_path / "child.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    with log.open("wb") as out:
        child = subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, env=env, stdout=out,
                                 stderr=subprocess.STDOUT)
    try:
        for condition, what in moments:
            wait_for_child(condition, what, child, log, deadline_seconds)
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
