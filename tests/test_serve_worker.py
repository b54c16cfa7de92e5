"""`quantdesk serve` on PostgreSQL runs its jobs in a `quantdesk worker` child process (bot/jobs/child.py): a
child SIGKILLed while `serve` runs is replaced and the next mention is answered; a child whose `serve` was
SIGKILLed stops on its own instead of running on as an orphan."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import migrated_pg_database
from tests.fakes.slack_server import SlackServer
from tests.slack_harness import (
    BotProcess,
    children,
    command_line,
    event_body,
    in_thread,
    mention,
    new_ts,
    post,
    wait_until,
)

ALICE = "UALICE"
ASK = "signal ma_cross 600519.SH 20190101"  # asks which dates: the worker ran it


def _worker_child(serve: BotProcess) -> int | None:
    """The `quantdesk worker` child of `serve` (a replacement is started by a watcher thread)."""
    return next((c for c in children(serve.proc.pid) if "worker" in command_line(c)), None)


def _gone(pid: int) -> bool:
    """Exited: no such process, or a zombie nobody reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[SlackServer, BotProcess]]:
    with migrated_pg_database() as url, SlackServer() as slack:
        process = BotProcess(slack.url, url, tmp_path)
        try:
            yield slack, process
        finally:
            process.stop()


def _asked(slack: SlackServer, serve: BotProcess, channel: str) -> None:
    root = new_ts()
    status, _ = post(serve.url, event_body(mention(channel, ALICE, ASK, root)), "application/json")
    assert status == 200
    slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c) and c.ok
                        and ":question:" in json.dumps(c.args.get("blocks")), timeout=90)


def test_a_killed_worker_child_is_replaced_and_a_killed_serve_takes_its_child_with_it(
        served: tuple[SlackServer, BotProcess]) -> None:
    slack, serve = served
    first = wait_until(lambda: _worker_child(serve), "serve's worker child")
    _asked(slack, serve, "CCHILD1")

    os.kill(first, signal.SIGKILL)
    second = wait_until(lambda: (c := _worker_child(serve)) not in (None, first) and c, "a new worker child",
                        timeout=30)
    _asked(slack, serve, "CCHILD2")  # the new child runs the jobs
    assert "exited with -9; starting another" in serve.output()

    assert serve.kill() == -9
    wait_until(lambda: _gone(second), "the orphaned worker child to stop", timeout=30)
    assert _gone(first)
