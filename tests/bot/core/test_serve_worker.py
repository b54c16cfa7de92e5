"""`quantdesk serve` on PostgreSQL runs its jobs in a `quantdesk worker` child process (bot/jobs/child.py): a
child SIGKILLed while `serve` runs is replaced and the next mention is answered; a child whose `serve` was
SIGKILLed stops on its own instead of running on as an orphan; a SIGTERMed `serve` stops its child before it exits."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.jobs import Message, make_job_queue
from testkit.fakes.slack_server import TEAM, SlackServer
from testkit.pg import migrated_pg_database
from testkit.slack import (
    BotProcess,
    WorkerProcess,
    children,
    command_line,
    event_body,
    in_thread,
    mention,
    new_ts,
    post,
    text_of,
)
from testkit.wait import wait_until
from tools.settings import Settings
from tools.storage.db import make_engine

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


def test_a_sigterm_stops_serve_and_its_worker_child_before_serve_exits(
        served: tuple[SlackServer, BotProcess]) -> None:
    """A service manager's stop: the listener stops, `serve` stops its child itself and exits 0; the child does not
    have to notice an orphaned parent. A second SIGTERM is not needed."""
    slack, serve = served
    child = wait_until(lambda: _worker_child(serve), "serve's worker child")
    _asked(slack, serve, "CCHILD3")
    serve.proc.terminate()
    assert serve.proc.wait(timeout=30) == 0
    assert _gone(child)  # stopped and reaped by serve before it exited
    assert "is gone; stopping this worker" not in serve.output()


@pytest.mark.postgres
def test_a_worker_runs_jobs_with_no_bolt_app_and_no_call_to_slack_at_start(tmp_path: Path) -> None:
    """`quantdesk worker` is the core on a bare WebClient (issue 24): it starts without a Bolt app (whose constructor
    calls auth.test), and a job it runs posts into its thread all the same."""
    with migrated_pg_database() as url, SlackServer() as slack:
        worker = WorkerProcess.start(slack.url, url, tmp_path)
        try:
            wait_until(worker.started, "the worker to run jobs")
            assert slack.fake.calls == []  # nothing was asked of Slack to start
            settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path))
            engine = make_engine(url)
            root = new_ts()
            make_job_queue(engine, settings, "slack-").submit_text(Message(f"msg:C8100:{root}", TEAM, "C8100", root,
                                                                           ALICE, ASK))
            slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread("C8100", root)(c)
                                and "Which date range" in text_of(c))
            assert slack.fake.of("auth.test") == []
            engine.dispose()
        finally:
            worker.stop()
