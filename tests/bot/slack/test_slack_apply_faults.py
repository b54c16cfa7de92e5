"""A clicked decision whose apply fails once on a real database fault (issue 12): `quantdesk serve --no-worker`
and `quantdesk worker` processes on PostgreSQL. The click is recorded while no worker runs; the test then locks
the checkpoint tables, starts a worker, and terminates the worker's database session once the apply waits on the
lock, as a database restart or a dropped connection would. The thread is told plainly, the reconciler applies the
decision later, and there is exactly one result. A click the listener cannot check because the database fails
is not recorded, and the clicker is told so."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.stores.records import DecisionRecord
from testkit.fakes.slack_server import Call, SlackServer
from testkit.pg import migrated_pg_database
from testkit.slack import (
    BotProcess,
    WorkerProcess,
    action_body,
    button_of,
    event_body,
    in_thread,
    mention,
    new_ts,
    post,
    result_call,
    review_call,
    text_of,
)
from testkit.wait import wait_until
from tools.factors.store import FactorStore
from tools.storage.db import make_engine

ALICE = "UALICE"
JSON, FORM = "application/json", "application/x-www-form-urlencoded"
NOT_YET = ":warning: Your decision is recorded but could not be applied yet: the database failed"


@dataclass
class Served:
    slack: SlackServer
    bot: BotProcess
    url: str
    data: Path

    def worker(self) -> WorkerProcess:
        worker = WorkerProcess.start(self.slack.url, self.url, self.data / f"worker{new_ts()}")
        wait_until(worker.started, "the worker's start line")
        return worker


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with migrated_pg_database() as url, SlackServer() as slack:
        bot = BotProcess(slack.url, url, tmp_path / "serve", QUANTDESK_IN_PROCESS_WORKER="false")
        try:
            yield Served(slack, bot, url, tmp_path)
        finally:
            bot.stop()


def _waiting_on_a_lock(admin: psycopg.Connection, database: str) -> list[int]:
    """Sessions of the bot's processes on `database` waiting for a lock (the test's own session excepted)."""
    rows = admin.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock' "
                         "AND pid <> pg_backend_pid()", (database,)).fetchall()
    return [pid for (pid,) in rows]


def _review(served: Served, channel: str, root: str, name: str) -> Call:
    status, _ = post(served.bot.url, event_body(mention(channel, ALICE, f"factor momentum 20190301 20200601 "
                                                                        f"window=15 name={name}", root)), JSON)
    assert status == 200
    return review_call(served.slack, channel, root)


def _approve(served: Served, channel: str, root: str, review: Call) -> None:
    status, _ = post(served.bot.url, action_body(ALICE, channel, review.response["ts"], root,
                                                 button_of(review, "review_approve")), FORM)
    assert status == 200


def _decisions(url: str) -> list[DecisionRecord]:
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            return list(session.scalars(select(DecisionRecord)).all())
    finally:
        engine.dispose()


def test_an_apply_cut_by_a_dropped_database_session_is_applied_later_exactly_once(served: Served) -> None:
    slack, channel, root, name = served.slack, "CAPPLY", new_ts(), "apply_fault"
    first = served.worker()
    review = _review(served, channel, root, name)
    first.stop()  # the click is recorded and queued while no worker runs
    _approve(served, channel, root, review)
    wait_until(lambda: _decisions(served.url), "the decision row")
    database = served.url.rsplit("/", 1)[1]
    with psycopg.connect(served.url) as locker, psycopg.connect(served.url, autocommit=True) as admin:
        locker.execute("LOCK TABLE checkpoints, checkpoint_writes, checkpoint_blobs IN ACCESS EXCLUSIVE MODE")
        worker = served.worker()
        waiting = wait_until(lambda: _waiting_on_a_lock(admin, database), "the apply to wait on the checkpoint lock")
        for pid in waiting:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
        locker.rollback()  # the lock goes; the database is fine again
    try:
        told = slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                                   and text_of(c).startswith(NOT_YET))
        assert "nothing is lost" in text_of(told[0])
        result_call(slack, channel, root, f"Factor {name} v1 saved")  # applied by the reconciler's retry
        wait_until(lambda: all(d.applied_at for d in _decisions(served.url)), "the decision marked applied")
    finally:
        worker.stop()
    results = [c for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c) and c.ok
               and text_of(c).startswith(f"Factor {name} v1 saved")]
    assert len(results) == 1
    engine = make_engine(served.url)
    assert [v.version for v in FactorStore(engine).versions(name)] == [1]
    engine.dispose()
    (decision,) = _decisions(served.url)
    assert decision.attempts >= 1 and decision.outcome != "failed"
    assert "Traceback" not in served.bot.output() + worker.output(), worker.output()[-3000:]


def test_a_click_the_listener_cannot_check_is_not_recorded_and_the_clicker_is_told(served: Served) -> None:
    slack, channel, root = served.slack, "CAPPLY2", new_ts()
    worker = served.worker()
    try:
        review = _review(served, channel, root, "apply_fault_2")
    finally:
        worker.stop()
    database = served.url.rsplit("/", 1)[1]
    with psycopg.connect(served.url) as locker, psycopg.connect(served.url, autocommit=True) as admin:
        locker.execute("LOCK TABLE checkpoints, checkpoint_writes, checkpoint_blobs IN ACCESS EXCLUSIVE MODE")
        # a click is acked once its decision is recorded: the request waits while the listener's check waits
        answered: list[int] = []
        body = action_body(ALICE, channel, review.response["ts"], root, button_of(review, "review_approve"))
        click = threading.Thread(target=lambda: answered.append(post(served.bot.url, body, FORM)[0]))
        click.start()
        waiting = wait_until(lambda: _waiting_on_a_lock(admin, database), "the click's check to wait on the lock")
        for pid in waiting:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
        locker.rollback()
        click.join(timeout=30)
        assert answered == [200]  # acked once the check failed
    (told,) = slack.fake.wait_for("chat.postEphemeral", where=lambda c: c.args.get("user") == ALICE)
    assert text_of(told).startswith("I could not record your decision: the database did not answer")
    assert _decisions(served.url) == []  # nothing recorded: the buttons still decide
    assert "Traceback" not in served.bot.output(), served.bot.output()[-3000:]
