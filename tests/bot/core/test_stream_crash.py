"""A SIGKILL mid-stream, then a restart (issue 26, item 3): a child process streams a long report into a thread
(chat.startStream, its ts recorded in the post row at once); the fake Slack takes the second chunk and never
answers, and the child is SIGKILLed. A fresh core's background service then replaces the half message with the
complete report (it never appends to or stops the dead stream): the thread ends with one complete report."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.core.background import BackgroundService
from bot.slack.serve import slack_core
from bot.startup import build_context
from bot.stores.posts import PostStore
from bot.stores.threads import thread_id_for
from graphs.checkpointer import open_checkpointer
from testkit.child_process import kill_child_when
from testkit.children.stream_crash import ALICE, REPORT, TITLE, settings
from testkit.fakes.slack_faults import FaultySlack
from testkit.fakes.slack_server import TEAM, Fault, SlackServer
from testkit.slack import new_ts
from testkit.wait import wait_until
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

CHANNEL = "CSTREAM"
KEY = "prose:crash-test"


@pytest.fixture
def slack() -> Iterator[SlackServer]:
    fake = FaultySlack(hold_method="chat.appendStream", hold_when=lambda args: True)
    with SlackServer(fake) as server:
        yield server
        fake.release.set()


@pytest.mark.parametrize("update_refused", [False, True], ids=["updated", "deleted-and-posted-again"])
def test_a_stream_cut_by_a_sigkill_is_replaced_by_one_complete_report(slack: SlackServer, tmp_path: Path,
                                                                      update_refused: bool) -> None:
    url, root = f"sqlite:///{tmp_path / 'q.db'}", new_ts()
    engine = make_engine(url)
    upgrade(engine)
    fake = slack.fake
    assert isinstance(fake, FaultySlack)
    kill_child_when("testkit.children.stream_crash", [url, str(tmp_path), slack.url, CHANNEL, root, KEY], tmp_path,
                    [(fake.held.is_set, "the second chunk held")], 120)
    (started,) = fake.of("chat.startStream")
    ts = str(started.response["ts"])
    assert started.args["recipient_user_id"] == ALICE and started.args["recipient_team_id"] == TEAM
    post = PostStore(engine).get(KEY)
    assert post is not None and post.ts == ts and not post.complete  # recorded at the start, never finished
    assert not fake.of("chat.stopStream")
    (half,) = fake.replies(CHANNEL, root)
    assert half["text"] != f"*{TITLE}*\n{REPORT}"  # what the dead process left: a half message

    if update_refused:  # Slack may refuse to update a stream its process never stopped
        fake.inject("chat.update", Fault.slack_error("cant_update_message"))
    with open_checkpointer(url) as saver:
        core = slack_core(build_context(settings(url, str(tmp_path), slack.url)), saver)
        background = BackgroundService(core, jobs={})

        def replaced() -> bool:
            background.run_once()
            latest = PostStore(engine).get(KEY)
            return latest is not None and latest.complete

        wait_until(replaced, "the half report replaced", timeout=30)
    (whole,) = fake.replies(CHANNEL, root)  # one message in the thread: the complete report
    assert whole["text"] == f"*{TITLE}*\n{REPORT}"
    assert (whole["ts"] != ts) is update_refused and PostStore(engine).get(KEY).ts == whole["ts"]
    assert len(fake.of("chat.appendStream")) == 1 and not fake.of("chat.stopStream")  # the dead stream left alone
    assert thread_id_for(TEAM, CHANNEL, root) == post.thread_id
    engine.dispose()
