"""Decisions and posts survive faults (issue 12), driven in-process: the real front door, runner and graphs on
SQLite, against the fake Slack Web API with injected faults. The real-process SIGKILL tests are in
tests/test_slack_crash.py."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from slack_sdk import WebClient

from bot.context import build_context
from bot.decisions import DecisionStore, PostStore
from bot.jobs import make_job_queue
from bot.reconciler import Reconciler
from bot.registry import AuditLog, ThreadRegistry, thread_id_for
from bot.runner import Runner
from bot.slack.frontdoor import POST_EVENT, FrontDoor, Where
from graphs.checkpointer import open_checkpointer
from tests.fakes.slack_faults import FaultySlack, post_key
from tests.fakes.slack_server import TEAM, Fault, SlackServer
from tests.slack_harness import wait_until
from tools.settings import Settings
from tools.storage.db import sqlite_path

ALICE = "UALICE"


@dataclass
class Desk:
    door: FrontDoor
    fake: FaultySlack
    url: str

    def say(self, channel: str, root: str, text: str) -> None:
        self.door._handle_text(Where(TEAM, channel, root, ALICE), text)

    def results(self, channel: str, root: str) -> list[Any]:
        return [c for c in self.fake.of("chat.postMessage") if c.args.get("thread_ts") == root
                and c.ok and post_key(c.args).startswith("result:")]


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[Desk]:
    server = SlackServer(FaultySlack())
    url = f"sqlite:///{tmp_path / 'quantdesk.db'}"
    settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "data"))
    ctx = build_context(settings)
    with server, open_checkpointer(url) as saver:
        client = WebClient(token="xoxb-test", base_url=server.url)
        door = FrontDoor(Runner(ctx, saver), client, ThreadRegistry(ctx.engine), AuditLog(ctx.engine),
                         make_job_queue(ctx.engine, settings), frozenset())
        worker = door.queue.start_worker(door)  # the reconciler queues decisions: this runs them
        yield Desk(door, server.fake, url)  # type: ignore[arg-type]
        worker.stop()


def _question(desk: Desk, root: str) -> str:
    info = desk.door.registry.get(thread_id_for(TEAM, "C1", root))
    assert info is not None and info.status == "waiting"
    (interrupt_id,) = info.pending
    return interrupt_id


def test_a_decision_applied_before_a_crash_is_only_marked_applied(desk: Desk) -> None:
    desk.say("C1", "100.1", "signal ma_cross 600519.SH 20190101")  # asks for the end date
    interrupt_id = _question(desk, "100.1")
    thread_id = thread_id_for(TEAM, "C1", "100.1")
    assert desk.door.decide(thread_id, interrupt_id, ALICE, {"type": "respond", "message": "20190101 20200601"},
                            "thread reply") == (True, "")
    # the process applied it and died before marking it: the checkpoint has moved on, the row has not
    desk.door.runner.resume(thread_id, interrupt_id, {"type": "respond", "message": "20190101 20200601"}, ALICE)
    assert not DecisionStore(desk.door.registry.engine).get(interrupt_id).applied  # type: ignore[union-attr]
    Reconciler(desk.door).run_once()  # queues the unapplied decision; the worker finds the checkpoint moved on
    store = DecisionStore(desk.door.registry.engine)
    wait_until(lambda: store.get(interrupt_id).applied, "the decision marked applied")  # type: ignore[union-attr]
    assert store.get(interrupt_id).outcome == "applied"  # type: ignore[union-attr]
    assert len(desk.results("C1", "100.1")) == 1  # the result the crash lost is posted, once
    Reconciler(desk.door).run_once()
    desk.door.apply(interrupt_id)
    assert len(desk.results("C1", "100.1")) == 1  # and never again
    assert desk.door.decide(thread_id, interrupt_id, ALICE, {"type": "approve"}, "button") == (
        False, "Already handled.")


def test_a_database_failure_during_apply_is_retried_and_applied_once(desk: Desk) -> None:
    desk.say("C1", "200.1", "signal ma_cross 600519.SH 20190101")
    interrupt_id = _question(desk, "200.1")
    thread_id = thread_id_for(TEAM, "C1", "200.1")
    answer = {"type": "respond", "message": "20190101 20200601"}
    desk.door.decide(thread_id, interrupt_id, ALICE, answer, "thread reply")
    blocker = sqlite3.connect(sqlite_path(desk.url), timeout=0)
    blocker.execute("BEGIN EXCLUSIVE")  # the database is unavailable while the decision is applied
    try:
        desk.door.apply(interrupt_id, Where(TEAM, "C1", "200.1", ALICE))
    finally:
        blocker.rollback()
        blocker.close()
    record = DecisionStore(desk.door.registry.engine).get(interrupt_id)
    assert record is not None and not record.applied  # nothing was lost, nothing ran
    said = [c.args.get("text", "") for c in desk.fake.of("chat.postMessage") if c.args.get("thread_ts") == "200.1"]
    assert any("recorded but could not be applied yet" in t for t in said)
    reconciler = Reconciler(desk.door)

    def applied() -> bool:
        reconciler.run_once()  # queues it once its back-off is over; the worker applies it
        return DecisionStore(desk.door.registry.engine).get(interrupt_id).applied  # type: ignore[union-attr]

    wait_until(applied, "the reconciler to apply the decision after its back-off", timeout=30)
    assert len(desk.results("C1", "200.1")) == 1


def test_a_question_slack_refused_is_reposted_and_a_lost_ts_is_found_not_reposted(desk: Desk) -> None:
    desk.fake.inject("chat.postMessage", Fault.slack_error("internal_error"), Fault.slack_error("ratelimited"),
                     Fault.slack_error("msg_too_long"))
    desk.say("C1", "300.1", "factor momentum window=20")  # neither the status nor "Which dates?" can be posted
    thread_id = thread_id_for(TEAM, "C1", "300.1")
    posts = PostStore(desk.door.registry.engine)
    (unposted,) = [p for p in posts.unposted() if p.thread_id == thread_id]
    assert unposted.kind == "interrupt" and unposted.ts is None
    Reconciler(desk.door).run_once()  # msg_too_long on the blocks: posted as plain text instead
    questions = [c for c in desk.fake.of("chat.postMessage") if c.ok
                 and post_key(c.args) == unposted.key]
    assert len(questions) == 1 and "plain text" in questions[0].args["text"]
    assert posts.get(unposted.key).ts == questions[0].response["ts"]  # type: ignore[union-attr]

    # a result whose post Slack accepted, but whose ts the crashed process never saved: found, not re-posted
    posts.record("result:lost", thread_id, "result", {"workflow": None, "result": None, "text": "Done."})
    desk.door.client.chat_postMessage(channel="C1", thread_ts="300.1", text="Done.",
                                      metadata={"event_type": POST_EVENT, "event_payload": {"key": "result:lost"}})
    before = len(desk.fake.of("chat.postMessage"))
    Reconciler(desk.door).run_once()
    assert len(desk.fake.of("chat.postMessage")) == before
    assert posts.get("result:lost").ts is not None  # type: ignore[union-attr]


def test_stop_ends_a_running_job_at_its_next_step(desk: Desk) -> None:
    where = Where(TEAM, "C3", "600.1", ALICE)
    desk.door.submit_text(where, "factor momentum 20190301 20200601 window=20", "msg:C3:600.1")
    thread_id = thread_id_for(TEAM, "C3", "600.1")
    desk.fake.wait_for("chat.update", where=lambda c: c.args.get("ts") and "code" in str(c.args.get("text", "")))
    assert desk.door.queue.abort(thread_id)  # what the Stop button and a `cancel` reply do, without waiting
    stopped = desk.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("thread_ts") == "600.1"
                                 and str(c.args.get("text", "")).startswith("Stopped at your request"))
    assert len(stopped) == 1
    assert not any(str(c.args.get("text", "")).startswith("Code review") for c in desk.fake.of("chat.postMessage")
                   if c.args.get("thread_ts") == "600.1")  # it stopped before the review was reached
