"""The in-process Slack desk: the real core, runner and graphs on SQLite against the fake Slack Web API (with fault
injection), its background worker running, and ALICE typing into threads. `slack_desk` is the fixture (tests/conftest.py
loads this module as a plugin)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.core import Core
from bot.jobs import Message
from bot.slack.serve import slack_core
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from testkit.fakes.slack_faults import FaultySlack, post_key
from testkit.fakes.slack_server import TEAM, SlackServer
from testkit.slack import new_ts as new_key
from tools.settings import Settings

ALICE = "UALICE"


@dataclass
class Desk:
    core: Core
    fake: FaultySlack
    url: str

    def say(self, channel: str, root: str, text: str) -> None:
        """A message in a thread, run as its job runs it (the job is called here, not queued)."""
        self.core.run_text(Message(f"msg:{channel}:{new_key()}", TEAM, channel, root, ALICE, text))

    def results(self, channel: str, root: str) -> list[Any]:
        return [c for c in self.fake.of("chat.postMessage") if c.args.get("thread_ts") == root
                and c.ok and post_key(c.args).startswith("result:")]


@pytest.fixture
def slack_desk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Desk]:
    """`@pytest.mark.sqlite_busy(seconds)`: how long a write waits for a lock (a test that holds the database
    locked on purpose need not wait the default 30 s for each write to fail)."""
    server = SlackServer(FaultySlack())
    url = f"sqlite:///{tmp_path / 'quantdesk.db'}"
    busy = request.node.get_closest_marker("sqlite_busy")
    with server, open_checkpointer(url) as saver:
        settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "data"),
                            SLACK_BOT_TOKEN="xoxb-test", SLACK_API_URL=server.url,
                            QUANTDESK_SQLITE_BUSY_SECONDS=busy.args[0] if busy else 30.0)
        core = slack_core(build_context(settings), saver)
        worker = core.queue.start_worker(core)  # the background pass queues decisions: this runs them
        yield Desk(core, server.fake, url)  # type: ignore[arg-type]
        worker.stop()
