"""The PostgreSQL job queue (procrastinate): enqueue-to-start latency (median, p99) of messages into idle threads
and of the next message of a busy thread; trivial-job throughput with 1, 2 and 4 worker processes, beside the
same trivial function called directly, in one run; then, end to end through Slack, the first-message latency of
other threads while a burst waits in one busy thread (bench/burst.py). Needs the server of QUANTDESK_TEST_PG_URL.

The throughput runs analyze procrastinate_jobs after queueing their jobs. Without statistics (a new database,
before autovacuum's first analyze) PostgreSQL plans procrastinate's fetch query as a scan of every waiting job:
about 100 ms per fetch with 2,000 jobs waiting, so about 10 jobs/s whatever the number of workers.

`python -m bench queue`; `main(quick=True)`: QUICK's counts and one worker process, a small burst (tests call it)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

from bench import burst
from bench.pg import PostgresUnavailable, scratch_database
from bot.jobs.base import APPLY_DECISION, apply_decision_job
from bot.jobs.inbox import Message
from bot.jobs.pg import PgJobQueue
from tools.settings import Settings
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Sizes:
    latency_jobs: int  # messages into idle threads, one every 50 ms
    same_thread_jobs: int  # messages into one busy thread
    throughput_jobs: int
    processes: tuple[int, ...]  # worker processes of each throughput run


FULL = Sizes(100, 30, 2000, (1, 2, 4))
QUICK = Sizes(10, 5, 100, (1,))


class BenchHandler:
    """Messages record when they started (wall clock: the bench and its workers share the host); decisions do
    nothing (the trivial job)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def run_text(self, message: Message) -> None:
        started = time.time()
        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute("INSERT INTO bench_starts (key, started) VALUES (%s, %s)", (message.key, started))

    def apply_decision(self, interrupt_id: str, thread_id: str) -> None:
        return None


def _settings(url: str) -> Settings:
    return Settings(DATABASE_URL=url)


def _start_workers(url: str, count: int) -> list[subprocess.Popen]:
    env = {**os.environ, "QUANTDESK_LOG_LEVEL": "WARNING"}
    processes = [subprocess.Popen([sys.executable, "-m", "bench.queue", "worker", url], cwd=ROOT, env=env)
                 for _ in range(count)]
    _wait(url, "SELECT count(*) FROM procrastinate_workers", lambda n: n == count)
    return processes


def _stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        process.wait(timeout=60)


def _wait(url: str, query: str, done, timeout: float = 120.0) -> float:  # noqa: ANN001
    """Poll `query` (one number) every 5 ms until `done(value)`; returns the time it became true."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(url, autocommit=True) as connection:
        while True:
            value = connection.execute(query).fetchone()[0]  # type: ignore[index]
            if done(value):
                return time.perf_counter()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{query!r} stuck at {value}")
            time.sleep(0.005)


def _summary(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)]
    return f"median {statistics.median(ordered) * 1000:7.1f} ms  p99 {p99 * 1000:7.1f} ms"


def _latency(url: str, queue: PgJobQueue, sizes: Sizes) -> None:
    processes = _start_workers(url, 1)
    try:
        submitted: dict[str, float] = {}
        submit_seconds = []
        for i in range(sizes.latency_jobs):  # every message its own thread, one every 50 ms: nothing waits
            message = Message(key=f"idle:{i}", team="T", channel="C", thread_ts=f"{i}.0", user="U", text="")
            submitted[message.key] = time.time()
            queue.submit_text(message)
            submit_seconds.append(time.time() - submitted[message.key])
            time.sleep(0.05)
        for i in range(sizes.same_thread_jobs):  # one thread: each waits for the previous one and the next poll
            message = Message(key=f"busy:{i:03d}", team="T", channel="C", thread_ts="busy", user="U", text="")
            submitted[message.key] = time.time()
            queue.submit_text(message)
        total = sizes.latency_jobs + sizes.same_thread_jobs
        _wait(url, "SELECT count(*) FROM bench_starts", lambda n: n == total)
        with psycopg.connect(url) as connection:
            started = dict(connection.execute("SELECT key, started FROM bench_starts").fetchall())
    finally:
        _stop(processes)
    idle = [started[k] - submitted[k] for k in submitted if k.startswith("idle:")]
    busy_keys = sorted(k for k in submitted if k.startswith("busy:"))
    behind = [started[b] - started[a] for a, b in zip(busy_keys, busy_keys[1:], strict=False)]
    interval = queue.settings.job_poll_interval
    print(f"  {f'submit_text: record, then enqueue ({len(idle)} messages)':52s} {_summary(submit_seconds)}")
    print(f"  {f'submit to start, idle thread ({len(idle)} messages)':52s} {_summary(idle)}")
    print(f"  {f'start to next start, one busy thread ({len(behind)} messages)':52s} {_summary(behind)}"
          f"  (poll interval {interval} s)")


def _throughput(url: str, queue: PgJobQueue, sizes: Sizes) -> None:
    jobs = sizes.throughput_jobs
    handler = BenchHandler(url)
    started = time.perf_counter()
    for i in range(jobs):
        apply_decision_job(handler, {"interrupt_id": f"direct-{i}", "thread_id": "direct"})
    direct = jobs / (time.perf_counter() - started)
    print(f"  {'trivial job function called directly':52s} {direct:12,.0f} jobs/s")
    concurrency = queue.settings.job_concurrency
    for count in sizes.processes:
        processes = _start_workers(url, count)
        try:
            with queue.engine.begin() as connection:  # one commit: every job becomes visible at once
                for i in range(jobs):
                    queue._defer(connection, APPLY_DECISION, f"t{count}-{i}", {"interrupt_id": f"{count}-{i}",
                                                                               "thread_id": f"t{count}-{i}"})
                connection.exec_driver_sql("ANALYZE procrastinate_jobs")
            committed_at = time.perf_counter()
            finished_at = _wait(url, "SELECT count(*) FROM procrastinate_jobs", lambda n: n == 0)
        finally:
            _stop(processes)
        rate = jobs / (finished_at - committed_at)
        print(f"  {f'{count} worker process(es), concurrency {concurrency} each':52s} {rate:12,.0f} jobs/s"
              f"  ({jobs} jobs, each its own thread)")


def main(quick: bool = False) -> None:
    sizes = QUICK if quick else FULL
    try:
        with scratch_database() as url:
            engine = make_engine(url)
            upgrade(engine)
            with psycopg.connect(url, autocommit=True) as connection:
                connection.execute("CREATE TABLE bench_starts (key text PRIMARY KEY, started double precision)")
            queue = PgJobQueue(engine, _settings(url))
            _latency(url, queue, sizes)
            _throughput(url, queue, sizes)
            engine.dispose()
    except PostgresUnavailable as exc:
        print(f"  skipped: PostgreSQL unavailable ({exc})")
        return
    burst.main(quick)


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        worker_url = sys.argv[2]
        PgJobQueue(make_engine(worker_url), _settings(worker_url)).run_worker(BenchHandler(worker_url))
    else:
        main()
