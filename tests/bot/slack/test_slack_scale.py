"""Slack at scale on real PostgreSQL and real processes: two `quantdesk serve --no-worker` listeners and two
`quantdesk worker` processes share one procrastinate queue. A hundred threads, each asked a clarify question
and answered, or shown a code review and approved by a click, through the other listener; Slack retries; and
a burst of replies into one busy thread that must not hold up another thread."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bot.stores.threads import thread_id_for
from testkit.fakes.slack_server import Call, SlackServer
from testkit.slack import (
    TEAM,
    BotProcess,
    WorkerProcess,
    action_body,
    blocks_valid,
    button_of,
    event_body,
    in_thread,
    mention,
    message,
    new_ts,
    post,
    process_env,
    text_of,
)
from testkit.wait import wait_until
from tools.factors.store import FactorStore
from tools.storage.db import make_engine

THREADS = 100  # mentions in the fan-out test: each asks a question and gets an answer, or a review and a click
REVIEWED_EVERY = 5  # every fifth thread is a factor request: its code review is approved by a click
RETRIED = 5  # of those, how many Slack also delivers a second time (X-Slack-Retry-Num: 1)
BURST = 30  # thread replies sent into one busy thread
WORKERS, WORKER_CONCURRENCY = 2, 2
ALICE = "UALICE"
WORKING = ":hourglass_flowing_sand: working…"
QUEUED = ":hourglass: queued"  # a request that waited over 2 s for a job slot says so
ASK = "signal ma_cross 600519.SH 20190101"  # no end date: the workflow asks for the date range
ANSWERS = ("20190101 20200601", "20190101 20191231")  # alternated, so each result shows which answer it got
RESULT = "Signal ma_cross"
DATES = re.compile(r"(\d{4}-\d{2}-\d{2}) – (\d{4}-\d{2}-\d{2})")
@dataclass
class Cluster:
    slack: SlackServer
    listeners: list[BotProcess]
    workers: list[WorkerProcess]
    database_url: str

    def send(self, listener: int, event: dict[str, Any], retry: int | None = None, body: str | None = None) -> str:
        body = body or event_body(event)
        status, _ = post(self.listeners[listener % len(self.listeners)].url, body, "application/json", retry=retry)
        assert status == 200
        return body

    def posts(self, channel: str, root: str) -> list[Call]:
        return [c for c in self.slack.fake.of("chat.postMessage") if in_thread(channel, root)(c)]

    def output(self) -> str:
        return "\n".join([p.output() for p in self.listeners] + [w.output() for w in self.workers])

    def jobs(self) -> dict[str, int]:
        with psycopg.connect(self.database_url) as conn:
            rows = conn.execute("SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY status").fetchall()
        return {status: n for status, n in rows}

    def inbox_rows(self) -> int:
        with psycopg.connect(self.database_url) as conn:
            return conn.execute("SELECT count(*) FROM inbox").fetchone()[0]

    def thread_state(self, channel: str, root: str) -> str:
        """What a stuck thread shows: its posts, its jobs and inbox rows, and the processes' last output."""
        thread_id = thread_id_for(TEAM, channel, root)
        with psycopg.connect(self.database_url) as conn:
            jobs = conn.execute("SELECT id, task_name, status::text, attempts FROM procrastinate_jobs WHERE lock = %s",
                                (thread_id,)).fetchall()
            inbox = conn.execute("SELECT key, enqueued_at IS NOT NULL FROM inbox WHERE thread_id = %s",
                                 (thread_id,)).fetchall()
        posts = [text_of(c)[:80] for c in self.posts(channel, root)]
        return f"posts={posts} jobs={jobs} inbox={inbox} output={self.output()[-3000:]}"

    def idle(self) -> bool:
        jobs = self.jobs()
        return not jobs.get("todo") and not jobs.get("doing")


@pytest.fixture
def cluster(fresh_pg_url: str, tmp_path: Path) -> Iterator[Cluster]:
    with SlackServer() as slack:
        env = process_env(slack.url, fresh_pg_url, tmp_path / "migrate")
        migrated = subprocess.run([sys.executable, "-m", "bot.cli", "db", "upgrade"], env=env, capture_output=True,
                                  text=True, timeout=120)
        assert migrated.returncode == 0, migrated.stdout + migrated.stderr
        listeners: list[BotProcess] = []
        workers: list[WorkerProcess] = []
        try:
            for i in range(2):
                listeners.append(BotProcess(slack.url, fresh_pg_url, tmp_path / f"serve{i}",
                                            QUANTDESK_IN_PROCESS_WORKER="false"))
            for i in range(WORKERS):
                workers.append(WorkerProcess.start(slack.url, fresh_pg_url, tmp_path / f"worker{i}",
                                                   WORKER_CONCURRENCY))
            for worker in workers:
                wait_until(worker.started, "the worker's start line", timeout=60)
            yield Cluster(slack, listeners, workers, fresh_pg_url)
        finally:
            for process in [*listeners, *workers]:
                process.stop()


def _question(cluster: Cluster, channel: str, root: str) -> list[Call]:
    return [c for c in cluster.posts(channel, root) if ":question:" in json.dumps(c.args.get("blocks"))]


def _results(cluster: Cluster, channel: str, root: str) -> list[Call]:
    return [c for c in cluster.posts(channel, root) if c.ok and text_of(c).startswith(RESULT)]


def _statuses(cluster: Cluster, channel: str, root: str) -> list[Call]:
    """A run's status lines: posted as it starts, or its queued line (which the run then updates)."""
    return [c for c in cluster.posts(channel, root) if text_of(c) == WORKING or text_of(c).startswith(QUEUED)]


def _factor_name(i: int) -> str | None:
    """The factor thread i asks for (a window of its own, so no two share a body), or None: a signal thread."""
    return f"scale_{i}" if i % REVIEWED_EVERY == 0 else None


def _request(i: int) -> str:
    name = _factor_name(i)
    return f"factor momentum 20190301 20200601 window={10 + i} name={name}" if name else ASK


def _reviews(cluster: Cluster, channel: str, root: str) -> list[Call]:
    return [c for c in cluster.posts(channel, root) if c.ok and text_of(c).startswith("Code review for factor")]


def _saved(cluster: Cluster, channel: str, root: str, name: str) -> list[Call]:
    return [c for c in cluster.posts(channel, root) if c.ok and text_of(c).startswith(f"Factor {name} v1 saved")]


def test_many_threads_over_two_listeners_and_two_workers(cluster: Cluster) -> None:
    threads = [(f"CSCALE{i % 4}", new_ts()) for i in range(THREADS)]
    bodies = [cluster.send(i, mention(channel, ALICE, _request(i), root)) for i, (channel, root) in enumerate(threads)]
    for i, (channel, root) in enumerate(threads):
        asked = _reviews if _factor_name(i) else _question
        wait_until(lambda c=channel, r=root, a=asked: a(cluster, c, r), f"the question in {channel}/{root}",
                   timeout=240)

    # Slack delivers a few mentions again (after the first was acked and even run): nothing new starts
    for i in range(RETRIED):
        cluster.send(i + 1, {}, retry=1, body=bodies[i])

    # each answer or click goes to the other listener than its mention
    for i, (channel, root) in enumerate(threads):
        if _factor_name(i):
            (review,) = _reviews(cluster, channel, root)
            body = action_body(ALICE, channel, review.response["ts"], root, button_of(review, "review_approve"))
            status, _ = post(cluster.listeners[(i + 1) % 2].url, body, "application/x-www-form-urlencoded")
            assert status == 200
        else:
            cluster.send(i + 1, message(channel, ALICE, ANSWERS[i % 2], new_ts(), thread_ts=root))
    for i, (channel, root) in enumerate(threads):
        name = _factor_name(i)
        done = (lambda c=channel, r=root, n=name: _saved(cluster, c, r, n)) if name else (
            lambda c=channel, r=root: _results(cluster, c, r))
        wait_until(done, f"the result in {channel}/{root}", timeout=300,
                   seen=lambda c=channel, r=root: cluster.thread_state(c, r))
    wait_until(cluster.idle, "the queue to drain", timeout=120)

    factors = FactorStore(make_engine(cluster.database_url))
    for i, (channel, root) in enumerate(threads):
        if name := _factor_name(i):
            assert len(_reviews(cluster, channel, root)) == 1 and len(_saved(cluster, channel, root, name)) == 1
            assert [v.version for v in factors.versions(name)] == [1]  # approved and saved once
            continue
        questions, results = _question(cluster, channel, root), _results(cluster, channel, root)
        assert len(questions) == 1, (channel, root, [text_of(c) for c in questions])
        assert len(results) == 1, (channel, root, [text_of(c) for c in results])
        assert len(_statuses(cluster, channel, root)) == 2  # the question's run and the answer's, no other
        blocks_valid(questions[0])
        blocks = blocks_valid(results[0])
        assert blocks[0]["type"] == "header"
        # the result reflects this thread's answer: its last date lies in the answer's end year
        found = DATES.search(json.dumps(blocks, ensure_ascii=False))
        assert found, json.dumps(blocks)[:500]
        end_year = ANSWERS[i % 2].split()[1][:4]
        assert found.group(1).startswith("2019") and found.group(2).startswith(end_year), (ANSWERS[i % 2],
                                                                                          found.group(0))
        answered = [c for c in cluster.slack.fake.of("chat.update") if c.args.get("channel") == channel
                    and c.args.get("ts") == questions[0].response["ts"]]
        assert len(answered) == 1 and ANSWERS[i % 2] in json.dumps(answered[0].args["blocks"])
    # one inbox row per mention and per answer (clicks are decision rows); the retries added none
    reviewed = sum(1 for i in range(THREADS) if _factor_name(i))
    assert cluster.inbox_rows() == 2 * THREADS - reviewed
    assert set(cluster.jobs()) <= {"succeeded"}, cluster.jobs()  # none failed (succeeded jobs may be deleted)
    assert "Traceback" not in cluster.output(), cluster.output()[-4000:]


def test_a_burst_into_a_busy_thread_does_not_hold_up_another_thread(cluster: Cluster) -> None:
    busy_channel, busy = "CBUSY", new_ts()
    cluster.send(0, mention(busy_channel, ALICE, f"{ASK} 20200601", busy))
    # the thread is known (its registry row exists) once its first run posted its status
    wait_until(lambda: _statuses(cluster, busy_channel, busy), "the busy thread's first status")
    for i in range(BURST):
        cluster.send(i, message(busy_channel, ALICE, f"fast={2 + i % 3}", new_ts(), thread_ts=busy))  # re-runs
    other_channel, other = "COTHER", new_ts()
    cluster.send(1, mention(other_channel, ALICE, ASK, other))

    first_other = wait_until(lambda: cluster.posts(other_channel, other), "the other thread's first message")[0]
    runs = 1 + BURST
    wait_until(lambda: len(_statuses(cluster, busy_channel, busy)) >= runs, "every reply of the burst to run",
               timeout=600)
    wait_until(lambda: len(_results(cluster, busy_channel, busy)) >= runs, "every run's result", timeout=120)
    wait_until(cluster.idle, "the queue to drain", timeout=120)

    calls = cluster.slack.fake.calls
    position = next(i for i, c in enumerate(calls) if c is first_other)
    busy_statuses = [i for i, c in enumerate(calls) if c.method == "chat.postMessage"  # one per run: its working
                     and in_thread(busy_channel, busy)(c)  # line, or its queued line when no worker took it in 2 s
                     and (text_of(c) == WORKING or text_of(c).startswith(QUEUED))]
    started_before = sum(1 for i in busy_statuses if i < position)
    # the other thread spoke while most of the burst was still queued behind the busy thread's lock
    assert started_before < runs, (started_before, runs)
    assert busy_statuses[-1] > position
    assert text_of(first_other) in (WORKING, ) or ":question:" in json.dumps(first_other.args.get("blocks"))
    # the burst ran one job at a time, every reply once: one status and one result per run, in turn
    assert len(busy_statuses) == runs and len(_results(cluster, busy_channel, busy)) == runs
    # a run posts its working line as it starts (a queued line, posted by the intake after 2 s in the queue, can
    # come while the run before it still runs): no run starts before the one before it posted its result
    posts = [c for c in cluster.posts(busy_channel, busy) if text_of(c) == WORKING or text_of(c).startswith(RESULT)]
    starts = [text_of(c) == WORKING for c in posts]
    assert not any(a and b for a, b in itertools.pairwise(starts)), starts
    assert set(cluster.jobs()) <= {"succeeded"}, cluster.jobs()
    assert cluster.inbox_rows() == runs + 1
    print(f"busy-thread runs started before the other thread's first message: {started_before} of {runs}")
