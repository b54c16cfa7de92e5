"""A human decision survives SIGKILL (issue 12): the host of `quantdesk serve` (serve, its worker child on
PostgreSQL, its sandbox workers) is killed right after a click is accepted, in the middle of the resumed run, and
after the result's post reached Slack but before its ts was saved. A new process on the same database (SQLite and
PostgreSQL) applies the decision exactly once: one result, one set of uploads."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.stores.records import DecisionRecord, PostRecord
from bot.stores.threads import thread_id_for
from testkit.fakes.slack_faults import FaultySlack, post_key
from testkit.fakes.slack_server import TEAM, SlackServer
from testkit.pg import migrated_pg_database
from testkit.slack import (
    BotProcess,
    action_body,
    button_of,
    event_body,
    in_thread,
    mention,
    new_ts,
    post,
    review_call,
    text_of,
)
from testkit.wait import wait_until
from tools.factors.store import FactorStore
from tools.storage.db import make_engine

ALICE = "UALICE"
# a stalled job (its worker was killed) is retried after 3 s without a heartbeat, not the default 30
FAST = {"QUANTDESK_RECONCILE_INTERVAL": "0.5", "QUANTDESK_DECISION_CLAIM_SECONDS": "2",
        "QUANTDESK_JOB_STALLED_TIMEOUT": "3"}
@pytest.fixture
def slack() -> Iterator[SlackServer]:
    with SlackServer(FaultySlack()) as server:
        yield server


@dataclass(frozen=True)
class Host:
    """Where the bot keeps its state: SQLite in `data` (jobs in-process), or a PostgreSQL database (jobs in serve's
    worker child process)."""

    url: str
    data: Path


@pytest.fixture(params=["sqlite", "postgres"])
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Host]:
    if request.param == "sqlite":
        yield Host(f"sqlite:///{tmp_path / 'q.db'}", tmp_path)
        return
    with migrated_pg_database() as url:
        yield Host(url, tmp_path)


def _start(slack: SlackServer, host: Host) -> BotProcess:
    return BotProcess(slack.url, host.url, host.data, **FAST)


def _review_then_approve(slack: SlackServer, bot: BotProcess, channel: str, root: str, name: str) -> None:
    post(bot.url, event_body(mention(channel, ALICE, f"factor momentum 20190301 20200601 window=20 name={name}",
                                     root)), "application/json")
    review = review_call(slack, channel, root)
    status, _ = post(bot.url, action_body(ALICE, channel, review.response["ts"], root,
                                          button_of(review, "review_approve")), "application/x-www-form-urlencoded")
    assert status == 200  # acked: the decision row is in the database


def _settled(host: Host, channel: str, root: str) -> bool:
    """The decision is applied and every post of the thread is complete: nothing more can be posted."""
    engine = make_engine(host.url)
    thread = thread_id_for(TEAM, channel, root)
    with Session(engine) as session:
        decisions = session.scalars(select(DecisionRecord).where(DecisionRecord.thread_id == thread)).all()
        posts = session.scalars(select(PostRecord).where(PostRecord.thread_id == thread)).all()
    engine.dispose()
    return bool(decisions) and all(d.applied_at for d in decisions) and all(p.completed_at for p in posts)


def _exactly_once(slack: SlackServer, host: Host, channel: str, root: str, name: str) -> None:
    wait_until(lambda: _settled(host, channel, root), "the decision applied and every post complete", 120)
    results = [c for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c) and c.ok
               and text_of(c).startswith(f"Factor {name} v1 saved")]
    assert len(results) == 1 and post_key(results[0].args).startswith("result:")
    uploads = [c for c in slack.fake.of("files.completeUploadExternal") if c.args.get("thread_ts") == root]
    assert len(uploads) == 1
    engine = make_engine(host.url)
    assert [v.version for v in FactorStore(engine).versions(name)] == [1]  # saved once
    engine.dispose()


@pytest.mark.parametrize("moment", ["after the click", "mid-run"])
def test_sigkill_after_a_click_applies_the_decision_exactly_once(slack: SlackServer, host: Host,
                                                                 moment: str) -> None:
    channel, root, name = "C900", new_ts(), f"crash_{'a' if moment == 'after the click' else 'b'}"
    bot = _start(slack, host)
    _review_then_approve(slack, bot, channel, root, name)
    if moment == "mid-run":  # the resumed run reports its backfill: kill it there
        slack.fake.wait_for("chat.update", where=lambda c: c.args.get("channel") == channel
                            and "backfill" in str(c.args.get("text", "")))
    assert bot.kill_host() == -9
    again = _start(slack, host)
    try:
        _exactly_once(slack, host, channel, root, name)
    finally:
        again.stop()


def test_sigkill_after_the_result_reached_slack_before_its_ts_was_saved(slack: SlackServer, host: Host) -> None:
    channel, root, name = "C901", new_ts(), "crash_c"
    fake: FaultySlack = slack.fake  # type: ignore[assignment]
    fake.hold_when = lambda args: str(args.get("text", "")).startswith(f"Factor {name} v1 saved")
    bot = _start(slack, host)
    _review_then_approve(slack, bot, channel, root, name)
    assert fake.held.wait(timeout=120), "the result was never posted"
    assert bot.kill_host() == -9  # Slack has the message; the bot never learnt its ts
    fake.release.set()
    again = _start(slack, host)
    try:
        _exactly_once(slack, host, channel, root, name)
    finally:
        again.stop()


def test_sigkill_mid_run_of_a_request_goes_on_from_its_checkpoint_without_taking_the_message_twice(
        slack: SlackServer, host: Host) -> None:
    """The job of a mention is retried after the crash: the thread already holds its message, so the run goes on
    from its last checkpoint (the message is not added again, the request not read twice) and ends in one
    result."""
    from langchain_core.messages import HumanMessage

    from graphs.checkpointer import open_checkpointer
    from graphs.main import build_main_graph

    channel, root, request = "C902", new_ts(), "signal ma_cross 000001.SZ 20200101 20200630"
    fake: FaultySlack = slack.fake  # type: ignore[assignment]
    fake.hold_method = "chat.update"
    fake.hold_when = lambda args: "checks" in str(args.get("text", ""))  # the run has reported its checks
    bot = _start(slack, host)
    post(bot.url, event_body(mention(channel, ALICE, request, root)), "application/json")
    assert fake.held.wait(timeout=120), "the run never reported its checks"
    url, config = host.url, {"configurable": {"thread_id": thread_id_for(TEAM, channel, root)}}
    assert bot.kill_host() == -9
    killed = time.monotonic()
    fake.release.set()
    again = _start(slack, host)
    try:
        results = wait_until(lambda: [c for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c)
                                      and c.ok and text_of(c).startswith("Signal ma_cross")], "the result", 120)
        assert len(results) == 1 and "against buy-and-hold" in text_of(results[0])
        statuses = [c.response["ts"] for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c)
                    and text_of(c).startswith((":hourglass_flowing_sand: working", ":hourglass: queued"))]
        assert len(statuses) == 1  # the retried job updates the status line (or queued line) posted before
        steps = [text_of(c) for c in slack.fake.of("chat.update") if c.args.get("ts") == statuses[0]
                 and c.at > killed]
        # the run went on from its last checkpoint: its first step (long saved by then) was not run again
        assert len(steps) > 1 and not [s for s in steps if "planning" in s], steps
        assert not [c for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c)
                    and ("Usage" in text_of(c) or "went wrong" in text_of(c))]
    finally:
        again.stop()
    with open_checkpointer(url) as saver:
        state = build_main_graph(saver).get_state(config)
    asked = [m.content for m in state.values["messages"] if isinstance(m, HumanMessage)]
    assert asked == [request] and state.values["result"]["codes"] == ["000001.SZ"]
