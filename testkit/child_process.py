"""A child process the crash tests SIGKILL: started as `python -m MODULE ARGS` from the repository, watched until
it has reached the moment to kill it, then killed as a crash or an OOM kill would (no handler runs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from testkit.wait import wait_until

ROOT = Path(__file__).resolve().parents[1]


def wait_for_child(condition: Callable[[], bool], what: str, child: subprocess.Popen[bytes], log: Path,
                   deadline_seconds: float) -> None:
    """Poll `condition` until it holds; fail at once if the child died first, or at the deadline."""
    try:
        wait_until(condition, what, deadline_seconds,
                   gone=lambda: None if child.poll() is None else f"the child exited ({child.returncode})")
    except AssertionError as exc:
        pytest.fail(f"{exc}:\n{log.read_text()}")


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
