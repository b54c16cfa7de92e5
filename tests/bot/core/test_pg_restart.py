"""RESTARTS POSTGRESQL (its own private cluster, never the shared server): a PostgreSQL restart under load loses
no request and answers none twice (issue 39, item 3). `quantdesk serve` (signed requests, the fake Slack Web API,
its worker child) takes eight mentions; while they run, the server is restarted (a fast shutdown cuts every
session, as `pg_ctlcluster … restart` does: "the database system is shutting down"); eight more come after it.
Jobs the restart broke are retried with backoff, and go on from their checkpoints: every thread is answered
exactly once, and the queue ends empty with no failed job."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from bot.stores.threads import thread_id_for
from testkit.fakes.slack_server import SlackServer
from testkit.pg_cluster import PrivateCluster
from testkit.slack import TEAM, BotProcess, event_body, in_thread, mention, new_ts, post, text_of
from testkit.wait import wait_until
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

pytestmark = [pytest.mark.pg_restart, pytest.mark.xdist_group("pg_restart")]

ALICE = "UALICE"
CHANNEL = "C3903"
REQUEST = "signal ma_cross 000001.SZ,600000.SH 20200101 20200630"
RESULT = "Signal ma_cross"
UNDER_WAY = ":hourglass_flowing_sand: planning"  # a run's first step on its status line
FAST = {"QUANTDESK_RECONCILE_INTERVAL": "0.5", "QUANTDESK_DECISION_CLAIM_SECONDS": "2",
        "QUANTDESK_JOB_STALLED_TIMEOUT": "3"}
BEFORE = AFTER = 8


@pytest.fixture
def cluster() -> Iterator[PrivateCluster]:
    server = PrivateCluster().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def database(cluster: PrivateCluster) -> str:
    url = cluster.create_database("quantdesk")
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    return url


def _answers(slack: SlackServer, root: str) -> int:
    return sum(1 for c in slack.fake.of("chat.postMessage") if in_thread(CHANNEL, root)(c) and c.ok
               and text_of(c).startswith(RESULT))


def _thread_state(slack: SlackServer, url: str, root: str) -> dict[str, object]:
    """What an unanswered thread shows: its posts, its inbox row and its jobs."""
    thread_id = thread_id_for(TEAM, CHANNEL, root)
    with psycopg.connect(url) as conn:
        inbox = conn.execute("SELECT key, enqueued_at IS NOT NULL, done_at IS NOT NULL FROM inbox "
                             "WHERE thread_id = %s", (thread_id,)).fetchall()
        jobs = conn.execute("SELECT id, task_name, status::text, attempts FROM procrastinate_jobs WHERE lock = %s",
                            (thread_id,)).fetchall()
        # the thread's checkpoints, oldest first: (namespace, step, source, the channels it holds a version of)
        checkpoints = conn.execute(
            "SELECT checkpoint_ns, metadata->>'step', metadata->>'source', "
            "(SELECT string_agg(k, ',' ORDER BY k) FROM jsonb_object_keys(checkpoint->'channel_versions') k) "
            "FROM checkpoints WHERE thread_id = %s ORDER BY checkpoint_id", (thread_id,)).fetchall()
    posts = [(c.ok, text_of(c)[:60]) for c in slack.fake.of("chat.postMessage") if in_thread(CHANNEL, root)(c)]
    return {"posts": posts, "inbox": inbox, "jobs": jobs, "checkpoints": checkpoints}


def _queue(url: str) -> dict[str, int]:
    """procrastinate's jobs by status (a succeeded job is deleted)."""
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY status").fetchall()
    return {status: int(n) for status, n in rows}


def _unfinished(url: str) -> int:
    with psycopg.connect(url) as connection:
        row = connection.execute("SELECT count(*) FROM inbox WHERE done_at IS NULL").fetchone()
    return int(row[0]) if row else 0


def test_every_thread_is_answered_exactly_once_across_a_postgresql_restart(cluster: PrivateCluster, database: str,
                                                                           tmp_path: Path) -> None:
    with SlackServer() as slack:
        bot = BotProcess(slack.url, database, tmp_path, **FAST)
        try:
            roots = [new_ts() for _ in range(BEFORE + AFTER)]
            for root in roots[:BEFORE]:
                assert post(bot.url, event_body(mention(CHANNEL, ALICE, REQUEST, root)), "application/json")[0] == 200
            wait_until(lambda: any(text_of(c).startswith(UNDER_WAY) for c in slack.fake.of("chat.update")),
                       "runs under way", 120)
            cluster.restart()
            for root in roots[BEFORE:]:
                assert post(bot.url, event_body(mention(CHANNEL, ALICE, REQUEST, root)), "application/json")[0] == 200
            wait_until(lambda: all(_answers(slack, root) for root in roots), "every thread answered", 300,
                       seen=lambda: {"unanswered": {roots.index(r): _thread_state(slack, database, r)
                                                    for r in roots if not _answers(slack, r)},
                                     "not taken": [text_of(c) for c in slack.fake.of("chat.postMessage")
                                                   if "could not take" in text_of(c)],
                                     "output": bot.output()[-3000:]})
            wait_until(lambda: not _unfinished(database) and not _queue(database), "the queue empty", 60)
        finally:
            bot.stop()
        assert [_answers(slack, root) for root in roots] == [1] * len(roots), bot.output()[-3000:]
        print(f"messages whose job the restart broke and that were retried: {bot.output().count('is retried')}")


def test_a_mention_while_postgresql_is_down_is_answered_with_why_and_the_next_one_runs(cluster: PrivateCluster,
                                                                                        database: str,
                                                                                        tmp_path: Path) -> None:
    """A message that cannot be recorded is not lost in silence: the thread says the database does not answer and
    nothing was recorded; once the server is back, the bot takes the next mention as usual."""
    with SlackServer() as slack:
        bot = BotProcess(slack.url, database, tmp_path, **FAST)
        try:
            cluster.down()
            lost = new_ts()
            assert post(bot.url, event_body(mention(CHANNEL, ALICE, REQUEST, lost)), "application/json")[0] == 200
            (said,) = slack.fake.wait_for("chat.postMessage", timeout=120,
                                          where=lambda c: in_thread(CHANNEL, lost)(c) and c.ok)
            assert "my database does not answer, so nothing was recorded or run" in text_of(said)
            cluster.up()
            root = new_ts()
            assert post(bot.url, event_body(mention(CHANNEL, ALICE, REQUEST, root)), "application/json")[0] == 200
            wait_until(lambda: _answers(slack, root) == 1, "the mention after the restart answered", 180)
            assert _answers(slack, lost) == 0  # nothing of the lost mention ran
        finally:
            bot.stop()
