"""Decisions and posts survive faults (issue 12), driven in-process: the real core, runner and graphs on
SQLite, against the fake Slack Web API with injected faults. The real-process SIGKILL tests are in
tests/test_slack_crash.py."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.cards import Answer, Approve
from bot.core import Core, Place
from bot.jobs import Message
from bot.slack.serve import slack_core
from bot.slack.surface import POST_EVENT
from bot.startup import build_context
from bot.stores.decisions import DecisionStore
from bot.stores.posts import PostStore
from bot.stores.threads import thread_id_for
from graphs.checkpointer import open_checkpointer
from testkit.fakes.slack_faults import FaultySlack, post_key
from testkit.fakes.slack_server import TEAM, Fault, SlackServer
from testkit.slack import new_ts as new_key
from testkit.slack import run_background_pass
from testkit.wait import wait_until
from tools.settings import Settings
from tools.storage.db import sqlite_path

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
def desk(tmp_path: Path) -> Iterator[Desk]:
    server = SlackServer(FaultySlack())
    url = f"sqlite:///{tmp_path / 'quantdesk.db'}"
    with server, open_checkpointer(url) as saver:
        settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "data"),
                            SLACK_BOT_TOKEN="xoxb-test", SLACK_API_URL=server.url)
        core = slack_core(build_context(settings), saver)
        worker = core.queue.start_worker(core)  # the background pass queues decisions: this runs them
        yield Desk(core, server.fake, url)  # type: ignore[arg-type]
        worker.stop()


def _question(desk: Desk, root: str) -> str:
    info = desk.core.threads.get(thread_id_for(TEAM, "C1", root))
    assert info is not None and info.status == "waiting"
    (interrupt_id,) = info.pending
    return interrupt_id


def test_a_decision_applied_before_a_crash_is_only_marked_applied(desk: Desk) -> None:
    desk.say("C1", "100.1", "signal ma_cross 600519.SH 20190101")  # asks for the end date
    interrupt_id = _question(desk, "100.1")
    thread_id = thread_id_for(TEAM, "C1", "100.1")
    assert desk.core.decider.decide(thread_id, interrupt_id, ALICE, Answer("20190101 20200601"),
                            "thread reply").allowed
    # the process applied it and died before marking it: the checkpoint has moved on, the row has not
    desk.core.runner.resume(thread_id, interrupt_id, {"type": "respond", "message": "20190101 20200601"}, ALICE)
    store = DecisionStore(desk.core.queue.engine)
    assert not store.get(interrupt_id).applied  # type: ignore[union-attr]
    run_background_pass(desk.core)  # queues the unapplied decision; the worker finds the checkpoint moved on
    wait_until(lambda: store.get(interrupt_id).applied, "the decision marked applied")  # type: ignore[union-attr]
    assert store.get(interrupt_id).outcome == "applied"  # type: ignore[union-attr]
    assert len(desk.results("C1", "100.1")) == 1  # the result the crash lost is posted, once
    run_background_pass(desk.core)
    desk.core.apply_decision(interrupt_id, thread_id)
    assert len(desk.results("C1", "100.1")) == 1  # and never again
    verdict = desk.core.decider.decide(thread_id, interrupt_id, ALICE, Approve(), "button")
    assert (verdict.allowed, verdict.reason) == (False, "Already handled.")


def test_a_database_failure_during_apply_is_retried_and_applied_once(desk: Desk) -> None:
    desk.say("C1", "200.1", "signal ma_cross 600519.SH 20190101")
    interrupt_id = _question(desk, "200.1")
    thread_id = thread_id_for(TEAM, "C1", "200.1")
    answer = Answer("20190101 20200601")
    desk.core.decider.decide(thread_id, interrupt_id, ALICE, answer, "thread reply")
    blocker = sqlite3.connect(sqlite_path(desk.url), timeout=0)
    blocker.execute("BEGIN EXCLUSIVE")  # the database is unavailable while the decision is applied
    try:
        desk.core.apply_decision(interrupt_id, thread_id)
    finally:
        blocker.rollback()
        blocker.close()
    record = DecisionStore(desk.core.queue.engine).get(interrupt_id)
    assert record is not None and not record.applied  # nothing was lost, nothing ran
    said = [c.args.get("text", "") for c in desk.fake.of("chat.postMessage") if c.args.get("thread_ts") == "200.1"]
    assert any("recorded but could not be applied yet" in t for t in said)

    def applied() -> bool:
        run_background_pass(desk.core)  # queues it once its back-off is over; the worker applies it
        return DecisionStore(desk.core.queue.engine).get(interrupt_id).applied  # type: ignore[union-attr]

    wait_until(applied, "the background pass to apply the decision after its back-off", timeout=30)
    assert len(desk.results("C1", "200.1")) == 1


def test_a_question_slack_refused_is_reposted_and_a_lost_ts_is_found_not_reposted(desk: Desk) -> None:
    desk.fake.inject("chat.postMessage", Fault.slack_error("internal_error"), Fault.slack_error("ratelimited"),
                     Fault.slack_error("msg_too_long"))
    desk.say("C1", "300.1", "factor momentum window=20")  # neither the status nor "Which dates?" can be posted
    thread_id = thread_id_for(TEAM, "C1", "300.1")
    posts = PostStore(desk.core.queue.engine)
    (unposted,) = [p for p in posts.unposted() if p.thread_id == thread_id]
    assert unposted.kind == "interrupt" and unposted.ts is None
    run_background_pass(desk.core)  # msg_too_long on the blocks: posted as plain text instead
    questions = [c for c in desk.fake.of("chat.postMessage") if c.ok
                 and post_key(c.args) == unposted.key]
    assert len(questions) == 1 and "plain text" in questions[0].args["text"]
    assert posts.get(unposted.key).ts == questions[0].response["ts"]  # type: ignore[union-attr]

    # a result whose post Slack accepted, but whose ts the crashed process never saved: found, not re-posted
    posts.record("result:lost", thread_id, "result", {"workflow": None, "result": None, "text": "Done."})
    desk.core.surface.client.chat_postMessage(  # type: ignore[attr-defined]
        channel="C1", thread_ts="300.1", text="Done.",
        metadata={"event_type": POST_EVENT, "event_payload": {"key": "result:lost"}})
    before = len(desk.fake.of("chat.postMessage"))
    run_background_pass(desk.core)
    assert len(desk.fake.of("chat.postMessage")) == before
    assert posts.get("result:lost").ts is not None  # type: ignore[union-attr]


def test_stop_ends_a_running_job_at_its_next_step(desk: Desk) -> None:
    desk.core.intake.submit_text(Place(TEAM, "C3", "600.1", ALICE), "factor momentum 20190301 20200601 window=20",
                          "msg:C3:600.1")
    thread_id = thread_id_for(TEAM, "C3", "600.1")
    desk.fake.wait_for("chat.update", where=lambda c: c.args.get("ts") and "code" in str(c.args.get("text", "")))
    assert desk.core.queue.abort(thread_id)  # what the Stop button and a `cancel` reply do, without waiting
    stopped = desk.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("thread_ts") == "600.1"
                                 and str(c.args.get("text", "")).startswith("Stopped at your request"))
    assert len(stopped) == 1
    assert not any(str(c.args.get("text", "")).startswith("Code review") for c in desk.fake.of("chat.postMessage")
                   if c.args.get("thread_ts") == "600.1")  # it stopped before the review was reached
