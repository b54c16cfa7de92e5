"""The job queue (bot/jobs): per-thread order, no head-of-line blocking across threads, inbox dedupe and requeue,
decisions, abort at a node boundary, crash safety with SIGKILLed worker processes and with jobs whose outcome was
never written, one queue per surface on a shared database, and the worker command.

Handlers record what they did in a `job_events` table of the test database (ordered by its id, with the scope of the
queue whose worker ran it), so workers in other processes report the same way as in-process ones. A job whose text is
`gate:NAME` waits until the test opens that gate (a row in `job_gates`); `steps:N` runs N short steps, checking
`should_stop()` between them."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Column, Engine, Integer, MetaData, String, Table, insert, select, text

from bot.cli import _parser
from bot.jobs import JobQueue, Message, make_job_queue, should_stop, start_serve_worker
from bot.jobs.base import RUN_TEXT, RUNS_QUEUE
from bot.jobs.child import worker_command
from bot.jobs.local import LocalJobQueue
from bot.jobs.pg import PgJobQueue, Reaper, TrackedWorker, connection_budget, make_app
from bot.surfaces import FEISHU, FEISHU_TEAM, SLACK
from testkit.paths import REPO
from testkit.wait import wait_until
from tools.settings import Settings, get_settings
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

STEP_SECONDS = 0.05
WAIT_SECONDS = 60.0

_meta = MetaData()
events = Table("job_events", _meta, Column("id", Integer, primary_key=True, autoincrement=True),
               Column("key", String(100)), Column("thread_id", String(64)), Column("phase", String(16)),
               Column("pid", Integer), Column("by", String(16)))
gates = Table("job_gates", _meta, Column("name", String(64), primary_key=True))


def _settings(url: str, tmp: Path, **extra: Any) -> Settings:
    return Settings(DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp), QUANTDESK_JOB_POLL_INTERVAL=0.1, **extra)


class Recorder:
    """The test handler: records start / end / stopped / decision rows (`by`: the scope of the worker's queue);
    obeys `gate:` and `steps:` texts."""

    def __init__(self, engine: Engine, by: str = "") -> None:
        self.engine = engine
        self.by = by

    def _record(self, key: str, thread_id: str, phase: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(insert(events).values(key=key, thread_id=thread_id, phase=phase, pid=os.getpid(),
                                                     by=self.by))

    def run_text(self, message: Message) -> None:
        kind, _, arg = message.text.partition(":")
        self._record(message.key, message.thread_id, "start")
        if kind == "gate":
            deadline = time.monotonic() + WAIT_SECONDS
            while not _gate_open(self.engine, arg):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"gate {arg} never opened")
                time.sleep(0.02)
        elif kind == "steps":
            for _ in range(int(arg)):
                if should_stop():
                    self._record(message.key, message.thread_id, "stopped")
                    return
                time.sleep(STEP_SECONDS)  # one node's work
        self._record(message.key, message.thread_id, "end")

    def apply_decision(self, interrupt_id: str, thread_id: str) -> None:
        self._record(interrupt_id, thread_id, "decision")


def _gate_open(engine: Engine, name: str) -> bool:
    with engine.connect() as connection:
        return connection.execute(select(gates.c.name).where(gates.c.name == name)).first() is not None


def _open_gate(engine: Engine, name: str) -> None:
    with engine.begin() as connection:
        connection.execute(insert(gates).values(name=name))


def _events(engine: Engine, thread_id: str | None = None) -> list[tuple[str, str, int]]:
    query = select(events.c.key, events.c.phase, events.c.pid).order_by(events.c.id)
    if thread_id is not None:
        query = query.where(events.c.thread_id == thread_id)
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(query)]  # type: ignore[misc]


def _wait_for(engine: Engine, done: Callable[[list[tuple[str, str, int]]], bool],
              timeout: float = WAIT_SECONDS) -> list[tuple[str, str, int]]:
    """The events once `done(events)` holds; fail with what was seen after `timeout` seconds."""
    def ready() -> tuple[list[tuple[str, str, int]]] | None:
        seen = _events(engine)
        return (seen,) if done(seen) else None

    (seen,) = wait_until(ready, "the events asked for", timeout, interval=0.02, seen=lambda: _events(engine))
    return seen


def _has(key: str, phase: str) -> Callable[[list[tuple[str, str, int]]], bool]:
    return lambda seen: any(k == key and p == phase for k, p, _ in seen)


def _message(key: str, text: str, thread_ts: str = "1700000000.000100") -> Message:
    return Message(key=key, team="T1", channel="C1", thread_ts=thread_ts, user="U1", text=text)


def _start_and_end_in_order(seen: list[tuple[str, str, int]], keys: list[str]) -> bool:
    return [(k, p) for k, p, _ in seen] == [(k, p) for k in keys for p in ("start", "end")]


# --- fixtures ------------------------------------------------------------------------------------------------

Workers = Callable[..., subprocess.Popen]
InProcess = Callable[..., "_InProcess"]
Engines = Callable[[str], Engine]


def _prepared(url: str) -> str:
    """The database migrated, with the test's event tables."""
    engine = make_engine(url)
    upgrade(engine)
    _meta.create_all(engine)
    engine.dispose()
    return url


@pytest.fixture(params=["sqlite", "postgres"])
def queue_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database of its own, on SQLite and on PostgreSQL (a fresh one: other tests' jobs stay out)."""
    if request.param == "sqlite":
        return _prepared(f"sqlite:///{tmp_path / 'jobs.db'}")
    return _prepared(request.getfixturevalue("fresh_pg_url"))


@pytest.fixture
def pg_queue_url(fresh_pg_url: str) -> str:
    return _prepared(fresh_pg_url)


@pytest.fixture
def engine_for() -> Iterator[Engines]:
    engines: list[Engine] = []

    def make(url: str) -> Engine:
        engines.append(make_engine(url))
        return engines[-1]

    yield make
    for engine in engines:
        engine.dispose()


@pytest.fixture
def workers() -> Iterator[Workers]:
    """Worker processes (this module run as a script); stopped with SIGTERM, or killed, at the end."""
    started: list[subprocess.Popen] = []

    def start(url: str, concurrency: int = 2, stalled_timeout: float = 30.0) -> subprocess.Popen:
        env = {**os.environ, "QUANTDESK_LOG_LEVEL": "WARNING"}
        process = subprocess.Popen([sys.executable, "-m", "tests.bot.core.test_jobs", url, str(concurrency),
                                    str(stalled_timeout)], cwd=REPO, env=env)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.terminate()
    for process in started:
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class _InProcess:
    """A queue of `scope` on `url` with an in-process worker (threads) and the Recorder; stopped by the fixture."""

    def __init__(self, url: str, tmp: Path, concurrency: int, scope: str, **settings: Any) -> None:
        self.engine = make_engine(url)
        self.queue: JobQueue = make_job_queue(self.engine, _settings(url, tmp, **settings), scope)
        self.handle = self.queue.start_worker(Recorder(self.engine, scope), concurrency)

    def close(self) -> None:
        self.handle.stop(timeout=30)
        self.engine.dispose()


@pytest.fixture
def in_process(tmp_path: Path) -> Iterator[InProcess]:
    made: list[_InProcess] = []

    def make(url: str, concurrency: int = 2, scope: str = "", **settings: Any) -> _InProcess:
        made.append(_InProcess(url, tmp_path, concurrency, scope, **settings))
        return made[-1]

    yield make
    for item in made:
        item.close()


# --- order and fairness --------------------------------------------------------------------------------------


def test_one_thread_runs_in_arrival_order_one_job_at_a_time(queue_url: str, tmp_path: Path, workers: Workers,
                                                            in_process: InProcess, engine_for: Engines) -> None:
    """20 jobs of one thread: each starts after the previous ended, in arrival order. PostgreSQL: two worker
    processes with two slots each compete for them; SQLite: the executor's four threads."""
    keys = [f"C1:{i:02d}" for i in range(20)]
    if queue_url.startswith("sqlite"):
        queue = in_process(queue_url, concurrency=4).queue
    else:
        queue = make_job_queue(engine_for(queue_url), _settings(queue_url, tmp_path))
        workers(queue_url, concurrency=2)
        workers(queue_url, concurrency=2)
    for key in keys:
        assert queue.submit_text(_message(key, "quick"))
    seen = _wait_for(queue.engine, lambda seen: len(seen) == 40)
    assert _start_and_end_in_order(seen, keys), seen
    if queue_url.startswith("postgresql"):
        assert all(pid != os.getpid() for *_, pid in seen)  # the worker processes ran them


def test_a_burst_into_a_busy_thread_does_not_delay_another_thread(queue_url: str, tmp_path: Path, workers: Workers,
                                                                  in_process: InProcess, engine_for: Engines) -> None:
    """Thread A's first job holds its thread (gate), 29 more wait behind it; thread B's job, submitted after the
    burst, runs to its end while all of A's burst is still queued."""
    if queue_url.startswith("sqlite"):
        queue = in_process(queue_url, concurrency=2).queue
    else:
        queue = make_job_queue(engine_for(queue_url), _settings(queue_url, tmp_path))
        workers(queue_url, concurrency=2)
    burst = [f"A:{i:02d}" for i in range(30)]
    queue.submit_text(_message(burst[0], "gate:a", thread_ts="1.A"))
    for key in burst[1:]:
        queue.submit_text(_message(key, "quick", thread_ts="1.A"))
    queue.submit_text(_message("B:00", "quick", thread_ts="1.B"))

    seen = _wait_for(queue.engine, _has("B:00", "end"))
    assert [(k, p) for k, p, _ in seen if k.startswith("A")] in ([], [("A:00", "start")]), seen  # burst still queued
    _open_gate(queue.engine, "a")
    seen = _wait_for(queue.engine, lambda seen: sum(p == "end" for _, p, _ in seen) == 31)
    a_thread = Message(key="x", team="T1", channel="C1", thread_ts="1.A", user="U1", text="").thread_id
    assert _start_and_end_in_order(_events(queue.engine, a_thread), burst)


def test_a_worker_slot_is_never_parked_on_a_busy_thread(queue_url: str, in_process: InProcess) -> None:
    """In-process workers with two slots: with thread A held and a burst behind it, the other slot serves threads
    B, C and D one after another (none of A's queued jobs takes it and waits there)."""
    runner = in_process(queue_url, concurrency=2)
    queue = runner.queue
    queue.submit_text(_message("A:00", "gate:a", thread_ts="2.A"))
    for i in range(1, 10):
        queue.submit_text(_message(f"A:{i:02d}", "quick", thread_ts="2.A"))
    for name in "BCD":
        queue.submit_text(_message(f"{name}:00", "quick", thread_ts=f"2.{name}"))
    seen = _wait_for(queue.engine, lambda seen: all(_has(f"{n}:00", "end")(seen) for n in "BCD"))
    assert [k for k, p, _ in seen if k.startswith("A")] in ([], ["A:00"]), seen
    _open_gate(queue.engine, "a")
    _wait_for(queue.engine, _has("A:09", "end"))


# --- inbox dedupe, requeue and decisions ---------------------------------------------------------------------


def test_a_message_is_recorded_and_its_job_deferred_at_once_on_postgresql(pg_queue_url: str, tmp_path: Path,
                                                                          engine_for: Engines) -> None:
    """The listener's one statement: the inbox row, marked enqueued, and one job of the thread's lock with the
    message as its arguments; a redelivery records and defers nothing."""
    engine = engine_for(pg_queue_url)
    queue = PgJobQueue(engine, _settings(pg_queue_url, tmp_path))
    message = _message("C1:150.1", "quick")
    assert queue.submit_text(message) is True
    assert queue.submit_text(message) is False
    with engine.connect() as connection:
        jobs = connection.execute(text("SELECT queue_name, task_name, lock, args FROM procrastinate_jobs")).all()
        enqueued = connection.execute(text("SELECT enqueued_at IS NOT NULL FROM inbox")).scalars().all()
    assert [tuple(job) for job in jobs] == [(RUNS_QUEUE, RUN_TEXT, message.thread_id, message.payload())]
    assert enqueued == [True]
    assert queue.requeue_unqueued(older_than=0) == 0


def test_a_message_whose_job_cannot_be_deferred_is_recorded_for_the_requeue(pg_queue_url: str, tmp_path: Path,
                                                                            engine_for: Engines) -> None:
    """PostgreSQL refuses the job (a constraint no row meets): the message is still recorded, unqueued, and the
    background service's requeue enqueues it once the jobs table takes rows again."""
    engine = engine_for(pg_queue_url)
    queue = PgJobQueue(engine, _settings(pg_queue_url, tmp_path))
    with engine.begin() as connection:
        connection.execute(text("ALTER TABLE procrastinate_jobs ADD CONSTRAINT refuse_all CHECK (false) NOT VALID"))
    message = _message("C1:160.1", "quick")
    assert queue.submit_text(message) is True
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM procrastinate_jobs")).scalar_one() == 0
        assert connection.execute(text("SELECT enqueued_at IS NULL FROM inbox")).scalars().all() == [True]
    with engine.begin() as connection:
        connection.execute(text("ALTER TABLE procrastinate_jobs DROP CONSTRAINT refuse_all"))
    assert queue.requeue_unqueued(older_than=0) == 1
    with engine.connect() as connection:
        assert connection.execute(text("SELECT lock FROM procrastinate_jobs")).scalars().all() == [message.thread_id]


def test_inbox_dedupes_and_requeues_recorded_but_unqueued_messages(queue_url: str, in_process: InProcess) -> None:
    runner = in_process(queue_url, concurrency=1)
    queue = runner.queue
    first = _message("C1:100.1", "quick")
    assert queue.submit_text(first) is True
    assert queue.submit_text(first) is False  # a Slack retry / app_mention + message of the same post
    # a process that died between recording and enqueueing left this row behind
    lost = _message("C1:100.2", "quick")
    assert queue.inbox.record(lost.key, lost.thread_id, lost.payload())
    assert queue.requeue_unqueued(older_than=60) == 0  # too fresh: its submitter may still be enqueueing
    assert queue.requeue_unqueued(older_than=0) == 1
    assert queue.requeue_unqueued(older_than=0) == 0
    assert queue.submit_text(_message("C1:100.3", "quick"))  # a sentinel: FIFO, so anything queued before ran
    seen = _wait_for(queue.engine, _has("C1:100.3", "end"))
    assert [(k, p) for k, p, _ in seen] == [(k, p) for k in ("C1:100.1", "C1:100.2", "C1:100.3")
                                            for p in ("start", "end")]
    wait_until(lambda: all(queue.inbox.is_done(k) for k in ("C1:100.1", "C1:100.2", "C1:100.3")),
                "the inbox rows to be marked done")


def test_replies_enqueued_out_of_slacks_order_run_in_slacks_order(queue_url: str, in_process: InProcess) -> None:
    """Two replies ms apart: the listener recorded both, but enqueued the later one first. The thread still runs
    them in the order Slack posted them (message ts), each once."""
    runner = in_process(queue_url, concurrency=2)
    queue = runner.queue
    later, earlier = _message("msg:C1:1700000300.000200", "quick"), _message("msg:C1:1700000300.000100", "quick")
    for message in (later, earlier):  # recorded in this order: `later` reached the listener first
        assert queue.inbox.record(message.key, message.thread_id, message.payload())
    queue.requeue_unqueued(older_than=0)  # enqueued in the order they were recorded (the executor may take one)
    sentinel = _message("msg:C1:1700000300.000300", "quick")
    assert queue.submit_text(sentinel)  # the thread's jobs run in enqueue order: both earlier jobs ended before it
    seen = _wait_for(queue.engine, _has(sentinel.key, "end"))
    assert _start_and_end_in_order(seen, [earlier.key, later.key, sentinel.key]), seen  # each ran once


def test_a_decision_is_enqueued_once_while_waiting_and_runs_in_thread_order(queue_url: str,
                                                                            in_process: InProcess) -> None:
    runner = in_process(queue_url, concurrency=2)
    queue = runner.queue
    busy = _message("C1:200.1", "gate:d")
    queue.submit_text(busy)
    _wait_for(queue.engine, _has(busy.key, "start"))
    assert queue.submit_decision("intr-1", busy.thread_id) is True
    assert queue.submit_decision("intr-1", busy.thread_id) is False  # the reconciler's next pass
    queue.submit_text(_message("C1:200.2", "quick"))
    _open_gate(queue.engine, "d")
    seen = _wait_for(queue.engine, _has("C1:200.2", "end"))
    assert [(k, p) for k, p, _ in seen] == [("C1:200.1", "start"), ("C1:200.1", "end"), ("intr-1", "decision"),
                                            ("C1:200.2", "start"), ("C1:200.2", "end")]
    assert queue.submit_decision("intr-1", busy.thread_id) is True  # nothing pending now: a retry may enqueue


# --- abort ---------------------------------------------------------------------------------------------------


def test_abort_stops_a_long_job_at_its_next_boundary(queue_url: str, in_process: InProcess) -> None:
    runner = in_process(queue_url, concurrency=2)
    queue = runner.queue
    long = _message("C1:300.1", "steps:600")  # 30 s of steps if nothing stops it
    assert queue.abort(long.thread_id) is False  # nothing running
    queue.submit_text(long)
    queue.submit_text(_message("C1:300.2", "quick"))
    _wait_for(queue.engine, _has(long.key, "start"))
    started = time.monotonic()
    assert queue.abort(long.thread_id) is True  # returns at once: it does not queue behind the thread's lock
    assert time.monotonic() - started < 5
    seen = _wait_for(queue.engine, _has("C1:300.2", "end"), timeout=20)
    assert [(k, p) for k, p, _ in seen] == [(long.key, "start"), (long.key, "stopped"), ("C1:300.2", "start"),
                                            ("C1:300.2", "end")]
    assert queue.inbox.is_done(long.key)  # a user's abort is final: the message is not run again (done before
    # the next job of the thread could start)


# --- crash safety --------------------------------------------------------------------------------------------


def test_a_sigkilled_workers_job_runs_again_and_its_thread_proceeds(pg_queue_url: str, tmp_path: Path,
                                                                    workers: Workers, engine_for: Engines) -> None:
    engine = engine_for(pg_queue_url)
    queue = make_job_queue(engine, _settings(pg_queue_url, tmp_path))
    first = workers(pg_queue_url, concurrency=2, stalled_timeout=2)
    queue.submit_text(_message("C1:400.1", "gate:k"))
    queue.submit_text(_message("C1:400.2", "quick"))
    _wait_for(engine, _has("C1:400.1", "start"))
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    _open_gate(engine, "k")
    second = workers(pg_queue_url, concurrency=2, stalled_timeout=2)
    seen = _wait_for(engine, _has("C1:400.2", "end"))
    assert [(k, p, pid) for k, p, pid in seen] == [
        ("C1:400.1", "start", first.pid), ("C1:400.1", "start", second.pid), ("C1:400.1", "end", second.pid),
        ("C1:400.2", "start", second.pid), ("C1:400.2", "end", second.pid)]


def _plant_unowned_job(queue: PgJobQueue, message: Message, worker_id: int) -> int:
    """What PostgreSQL restarting under a job's last write leaves: the message recorded and enqueued, its job
    "doing" under the worker, which does not run it (procrastinate's worker raised writing its outcome and never
    tries again). One transaction: no worker can fetch the job in between."""
    assert queue.inbox.record(message.key, message.thread_id, message.payload())
    with queue.engine.begin() as connection:
        assert queue.inbox.claim(connection, message.key)
        job_id = queue._defer(connection, RUN_TEXT, message.thread_id, message.payload())
        connection.execute(text("UPDATE procrastinate_jobs SET status = 'doing', worker_id = :worker WHERE id = :id"),
                           {"worker": worker_id, "id": job_id})
    return job_id


def test_a_job_doing_under_a_live_worker_that_does_not_run_it_is_retried_and_its_thread_proceeds(
        pg_queue_url: str, in_process: InProcess, caplog: pytest.LogCaptureFixture) -> None:
    """A job left "doing" under a worker whose heartbeat goes on, which does not run it: the worker's reaper retries
    it, so it runs to its end once and its thread's next message (waiting behind its lock) follows; a job the
    worker runs meanwhile, across the reaper's passes, is left alone and ends once."""
    runner = in_process(pg_queue_url, concurrency=2, QUANTDESK_JOB_STALLED_TIMEOUT=8)  # a reaper pass every 4 s
    queue, engine = runner.queue, runner.engine
    assert isinstance(queue, PgJobQueue)
    busy = _message("C1:700.1", "gate:busy", thread_ts="7.A")
    queue.submit_text(busy)
    orphan, after = _message("C1:700.2", "quick", thread_ts="7.B"), _message("C1:700.3", "quick", thread_ts="7.B")
    try:
        _wait_for(engine, _has(busy.key, "start"))
        with engine.connect() as connection:
            (worker_id,) = connection.execute(text("SELECT id FROM procrastinate_workers")).scalars().all()
        with caplog.at_level("WARNING", logger="bot.jobs.pg"):
            job_id = _plant_unowned_job(queue, orphan, worker_id)
            assert queue.submit_text(after)
            seen = _wait_for(engine, _has(after.key, "end"), timeout=40)
    finally:
        _open_gate(engine, "busy")
    assert [(k, p) for k, p, _ in seen if k != busy.key] == [(orphan.key, "start"), (orphan.key, "end"),
                                                            (after.key, "start"), (after.key, "end")]
    assert queue.inbox.is_done(orphan.key) and queue.inbox.is_done(after.key)
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"job {job_id} ")] == [
        f"job {job_id} ({RUN_TEXT}, thread {orphan.thread_id}) is doing under this worker, which does not run it "
        "(its outcome was not written); retrying it"]
    seen = _wait_for(engine, _has(busy.key, "end"))
    assert [p for k, p, _ in seen if k == busy.key] == ["start", "end"]


def test_the_reaper_retries_a_job_its_worker_does_not_run_once_two_passes_saw_it(pg_queue_url: str,
                                                                                tmp_path: Path,
                                                                                engine_for: Engines) -> None:
    """A job the worker has just fetched is "doing" under it before it runs it: one pass that sees it so retries
    nothing; the next pass, still seeing it so, retries it (todo again, its lock free)."""
    engine = engine_for(pg_queue_url)
    queue = PgJobQueue(engine, _settings(pg_queue_url, tmp_path))
    assert queue.submit_text(_message("C1:710.1", "quick"))

    async def passes() -> tuple[list[int], str, list[int], str, int]:
        app = make_app(queue.conninfo, 2)
        async with app.open_async():
            worker = TrackedWorker(app, queues=[RUNS_QUEUE])
            worker.worker_id = await app.job_manager.register_worker()
            job = await app.job_manager.fetch_job(queues=[RUNS_QUEUE], worker_id=worker.worker_id)
            assert job is not None and job.id is not None
            reaper = Reaper(app, "", 30.0, worker)
            first = await reaper.run_pass()
            after_first = await app.job_manager.get_job_status_async(job.id)
            second = await reaper.run_pass()
            after_second = await app.job_manager.get_job_status_async(job.id)
            return first, after_first.value, second, after_second.value, job.id

    first, after_first, second, after_second, job_id = asyncio.run(passes())
    assert (first, after_first) == ([], "doing")
    assert (second, after_second) == ([job_id], "todo")


# --- one queue per surface -----------------------------------------------------------------------------------


def _feishu_message(key: str, text: str, thread_ts: str) -> Message:
    return Message(key=key, team=FEISHU_TEAM, channel="oc_jobs", thread_ts=thread_ts, user="ou_1", text=text)


def _runners(engine: Engine) -> dict[str, set[str]]:
    """Each key's recorded rows: the scopes of the workers that wrote them."""
    runners: dict[str, set[str]] = {}
    with engine.connect() as connection:
        for key, by in connection.execute(select(events.c.key, events.c.by)):
            runners.setdefault(key, set()).add(by)
    return runners


def test_each_surface_has_a_queue_of_its_own_on_a_shared_database(pg_queue_url: str, tmp_path: Path,
                                                                  in_process: InProcess,
                                                                  engine_for: Engines) -> None:
    """Slack's and Feishu's queues on one database: queue positions are counted per surface; Feishu's worker runs
    Feishu's jobs and never takes Slack's (deferred before its own, they would come first), Slack's worker, started
    beside it, runs Slack's, among them one left in the unscoped queue of before; and neither aborts the other's."""
    engine = engine_for(pg_queue_url)
    slack = PgJobQueue(engine, _settings(pg_queue_url, tmp_path), SLACK.scope)
    feishu = PgJobQueue(engine, _settings(pg_queue_url, tmp_path), FEISHU.scope)
    ours = [_message(f"S:{i}", "quick", thread_ts=f"8.S{i}") for i in range(3)]
    theirs = [_feishu_message(f"F:{i}", "quick", thread_ts=f"8.F{i}") for i in range(2)]
    for queue, message in ((slack, ours[0]), (feishu, theirs[0]), (slack, ours[1]), (feishu, theirs[1]),
                           (slack, ours[2])):
        assert queue.submit_text(message)
    assert [slack.ahead_of(m.key) for m in ours] == [0, 1, 2]
    assert [feishu.ahead_of(m.key) for m in theirs] == [0, 1]
    legacy = _message("S:legacy", "quick", thread_ts="8.S9")
    assert PgJobQueue(engine, _settings(pg_queue_url, tmp_path)).submit_text(legacy)

    in_process(pg_queue_url, concurrency=1, scope=FEISHU.scope)
    seen = _wait_for(engine, _has("F:1", "end"))
    assert [(k, p) for k, p, _ in seen] == [("F:0", "start"), ("F:0", "end"), ("F:1", "start"), ("F:1", "end")]
    assert [slack.ahead_of(m.key) for m in ours] == [0, 1, 2]  # Slack's still wait, in their own queue

    in_process(pg_queue_url, concurrency=1, scope=SLACK.scope)
    _wait_for(engine, lambda seen: sum(p == "end" for _, p, _ in seen) == 6)
    long = _message("S:long", "steps:600", thread_ts="8.S10")
    assert slack.submit_text(long)
    _wait_for(engine, _has(long.key, "start"))
    assert feishu.abort(long.thread_id) is False
    assert slack.abort(long.thread_id) is True
    _wait_for(engine, _has(long.key, "stopped"))
    runners = _runners(engine)
    assert {key: runners[key] for key in ("F:0", "F:1")} == {"F:0": {FEISHU.scope}, "F:1": {FEISHU.scope}}
    assert all(runners[m.key] == {SLACK.scope} for m in (*ours, legacy, long))


def test_serves_worker_child_runs_the_surface_of_its_queue() -> None:
    for surface in (SLACK, FEISHU):
        command = worker_command(surface.scope)
        assert command[1:4] == ["-m", "bot.cli", "worker"]
        assert _parser().parse_args(command[3:]).surface == surface.name


def test_sqlite_restart_runs_the_messages_a_dead_process_left_queued(tmp_path: Path) -> None:
    url = _prepared(f"sqlite:///{tmp_path / 'jobs.db'}")
    engine = make_engine(url)
    dead = LocalJobQueue(engine, _settings(url, tmp_path))
    for i in range(3):
        assert dead.submit_text(_message(f"C1:500.{i}", "quick"))  # queued in memory; the process "dies"
    restarted = LocalJobQueue(engine, _settings(url, tmp_path))
    handle = restarted.start_worker(Recorder(engine), 2)
    try:
        seen = _wait_for(engine, lambda seen: len(seen) == 6)
        assert _start_and_end_in_order(seen, [f"C1:500.{i}" for i in range(3)])
    finally:
        handle.stop()
        engine.dispose()


# --- the worker command and the connection budget ------------------------------------------------------------


def test_worker_command_refuses_the_embedded_sqlite_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from bot.cli import main

    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("QUANTDESK_DATA_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    try:
        for args in (["worker"], ["worker", "--concurrency", "3"], ["serve", "--no-worker"]):
            assert main(args) == 2
            assert "runs jobs in-process inside `quantdesk serve`" in capsys.readouterr().err
            assert gc.isenabled()  # the collector paused for the start is back (bot/heap.py)
    finally:
        get_settings.cache_clear()


def test_connection_budget_warns_when_processes_times_pools_exceed_max_connections(
        pg_queue_url: str, tmp_path: Path, engine_for: Engines, caplog: pytest.LogCaptureFixture) -> None:
    engine = engine_for(pg_queue_url)
    total, max_connections, warning = connection_budget(engine, _settings(pg_queue_url, tmp_path,
                                                                          QUANTDESK_JOB_PROCESSES=1))
    assert warning is None and total < max_connections
    processes = max_connections // total + 1
    with caplog.at_level("WARNING"):
        total, _, warning = connection_budget(engine, _settings(pg_queue_url, tmp_path,
                                                                QUANTDESK_JOB_PROCESSES=processes))
    assert total > max_connections and warning is not None and f"max_connections={max_connections}" in warning
    assert warning in caplog.text
    assert isinstance(make_job_queue(engine, _settings(pg_queue_url, tmp_path)), PgJobQueue)


def test_the_serve_worker_is_optional_only_on_postgres(queue_url: str, tmp_path: Path, engine_for: Engines) -> None:
    """`serve --no-worker` (QUANTDESK_IN_PROCESS_WORKER=false) leaves PostgreSQL's jobs to `quantdesk worker`; on
    SQLite nothing else would run them, so the in-process executor starts regardless."""
    engine = engine_for(queue_url)
    queue = make_job_queue(engine, _settings(queue_url, tmp_path, QUANTDESK_IN_PROCESS_WORKER=False))
    handle = start_serve_worker(queue, Recorder(engine))
    if queue_url.startswith("postgresql"):
        assert handle is None
        return
    assert handle is not None
    try:
        queue.submit_text(_message("C1:600.1", "quick"))
        _wait_for(engine, _has("C1:600.1", "end"))
    finally:
        handle.stop()


def _worker_main(url: str, concurrency: int, stalled_timeout: float) -> None:
    """A worker process for these tests: the Recorder handler on a procrastinate worker."""
    import logging

    logging.basicConfig(level=os.environ.get("QUANTDESK_LOG_LEVEL", "WARNING"))
    engine = make_engine(url)
    settings = Settings(DATABASE_URL=url, QUANTDESK_JOB_POLL_INTERVAL=0.1,
                        QUANTDESK_JOB_STALLED_TIMEOUT=stalled_timeout)
    PgJobQueue(engine, settings).run_worker(Recorder(engine), concurrency)


if __name__ == "__main__":
    _worker_main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
