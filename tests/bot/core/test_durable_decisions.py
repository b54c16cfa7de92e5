"""Decisions and posts survive faults (issue 12), driven in-process: the real core, runner and graphs on
SQLite, against the fake Slack Web API with injected faults. The real-process SIGKILL tests are in
tests/bot/slack/test_slack_crash.py."""

from __future__ import annotations

import sqlite3

import pytest

from bot.cards import Answer, Approve
from bot.core import Place
from bot.slack.surface import POST_EVENT
from bot.stores.decisions import DecisionStore
from bot.stores.posts import PostStore
from bot.stores.threads import thread_id_for
from testkit.fakes.slack_faults import post_key
from testkit.fakes.slack_server import TEAM, Fault
from testkit.slack import run_background_pass
from testkit.slack_desk import ALICE, Desk
from testkit.wait import wait_until
from tools.storage.db import sqlite_path


def _question(slack_desk: Desk, root: str) -> str:
    info = slack_desk.core.threads.get(thread_id_for(TEAM, "C1", root))
    assert info is not None and info.status == "waiting"
    (interrupt_id,) = info.pending
    return interrupt_id


def test_a_decision_applied_before_a_crash_is_only_marked_applied(slack_desk: Desk) -> None:
    slack_desk.say("C1", "100.1", "signal ma_cross 600519.SH 20190101")  # asks for the end date
    interrupt_id = _question(slack_desk, "100.1")
    thread_id = thread_id_for(TEAM, "C1", "100.1")
    assert slack_desk.core.decider.decide(thread_id, interrupt_id, ALICE, Answer("20190101 20200601"),
                                          "thread reply").allowed
    # the process applied it and died before marking it: the checkpoint has moved on, the row has not
    slack_desk.core.runner.resume(thread_id, interrupt_id, {"type": "respond", "message": "20190101 20200601"}, ALICE)
    store = DecisionStore(slack_desk.core.queue.engine)
    assert not store.get(interrupt_id).applied  # type: ignore[union-attr]
    run_background_pass(slack_desk.core)  # queues the unapplied decision; the worker finds the checkpoint moved on
    wait_until(lambda: store.get(interrupt_id).applied, "the decision marked applied")  # type: ignore[union-attr]
    assert store.get(interrupt_id).outcome == "applied"  # type: ignore[union-attr]
    assert len(slack_desk.results("C1", "100.1")) == 1  # the result the crash lost is posted, once
    run_background_pass(slack_desk.core)
    slack_desk.core.apply_decision(interrupt_id, thread_id)
    assert len(slack_desk.results("C1", "100.1")) == 1  # and never again
    verdict = slack_desk.core.decider.decide(thread_id, interrupt_id, ALICE, Approve(), "button")
    assert (verdict.allowed, verdict.reason) == (False, "Already handled.")


@pytest.mark.sqlite_busy(2)  # each write under the lock fails after 2 s instead of 30
def test_a_database_failure_during_apply_is_retried_and_applied_once(slack_desk: Desk) -> None:
    slack_desk.say("C1", "200.1", "signal ma_cross 600519.SH 20190101")
    interrupt_id = _question(slack_desk, "200.1")
    thread_id = thread_id_for(TEAM, "C1", "200.1")
    answer = Answer("20190101 20200601")
    slack_desk.core.decider.decide(thread_id, interrupt_id, ALICE, answer, "thread reply")
    blocker = sqlite3.connect(sqlite_path(slack_desk.url), timeout=0)
    blocker.execute("BEGIN EXCLUSIVE")  # the database is unavailable while the decision is applied
    try:
        slack_desk.core.apply_decision(interrupt_id, thread_id)
    finally:
        blocker.rollback()
        blocker.close()
    record = DecisionStore(slack_desk.core.queue.engine).get(interrupt_id)
    assert record is not None and not record.applied  # nothing was lost, nothing ran
    said = [c.args.get("text", "") for c in slack_desk.fake.of("chat.postMessage")
            if c.args.get("thread_ts") == "200.1"]
    assert any("recorded but could not be applied yet" in t for t in said)

    def applied() -> bool:
        run_background_pass(slack_desk.core)  # queues it once its back-off is over; the worker applies it
        return DecisionStore(slack_desk.core.queue.engine).get(interrupt_id).applied  # type: ignore[union-attr]

    wait_until(applied, "the background pass to apply the decision after its back-off", timeout=30)
    assert len(slack_desk.results("C1", "200.1")) == 1


def test_a_question_slack_refused_is_reposted_and_a_lost_ts_is_found_not_reposted(slack_desk: Desk) -> None:
    slack_desk.fake.inject("chat.postMessage", Fault.slack_error("internal_error"), Fault.slack_error("ratelimited"),
                     Fault.slack_error("msg_too_long"))
    slack_desk.say("C1", "300.1", "factor momentum window=20")  # neither the status nor "Which dates?" can be posted
    thread_id = thread_id_for(TEAM, "C1", "300.1")
    posts = PostStore(slack_desk.core.queue.engine)
    (unposted,) = [p for p in posts.unposted() if p.thread_id == thread_id]
    assert unposted.kind == "interrupt" and unposted.ts is None
    run_background_pass(slack_desk.core)  # msg_too_long on the blocks: posted as plain text instead
    questions = [c for c in slack_desk.fake.of("chat.postMessage") if c.ok
                 and post_key(c.args) == unposted.key]
    assert len(questions) == 1 and "plain text" in questions[0].args["text"]
    assert posts.get(unposted.key).ts == questions[0].response["ts"]  # type: ignore[union-attr]

    # a result whose post Slack accepted, but whose ts the crashed process never saved: found, not re-posted
    posts.record("result:lost", thread_id, "result", {"workflow": None, "result": None, "text": "Done."})
    slack_desk.core.surface.client.chat_postMessage(  # type: ignore[attr-defined]
        channel="C1", thread_ts="300.1", text="Done.",
        metadata={"event_type": POST_EVENT, "event_payload": {"key": "result:lost"}})
    before = len(slack_desk.fake.of("chat.postMessage"))
    run_background_pass(slack_desk.core)
    assert len(slack_desk.fake.of("chat.postMessage")) == before
    assert posts.get("result:lost").ts is not None  # type: ignore[union-attr]


def test_stop_ends_a_running_job_at_its_next_step(slack_desk: Desk) -> None:
    slack_desk.core.intake.submit_text(Place(TEAM, "C3", "600.1", ALICE), "factor momentum 20190301 20200601 window=20",
                          "msg:C3:600.1")
    thread_id = thread_id_for(TEAM, "C3", "600.1")
    slack_desk.fake.wait_for("chat.update", where=lambda c: c.args.get("ts") and "code" in str(c.args.get("text", "")))
    assert slack_desk.core.queue.abort(thread_id)  # what the Stop button and a `cancel` reply do, without waiting
    stopped = slack_desk.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("thread_ts") == "600.1"
                                 and str(c.args.get("text", "")).startswith("Stopped at your request"))
    assert len(stopped) == 1
    assert not any(str(c.args.get("text", "")).startswith("Code review") for c in slack_desk.fake.of("chat.postMessage")
                   if c.args.get("thread_ts") == "600.1")  # it stopped before the review was reached
