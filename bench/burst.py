"""A burst into one busy thread must not hold up the others (issue 12), end to end on PostgreSQL: a real
`quantdesk serve --no-worker` and two `quantdesk worker` processes (concurrency 2) against the fake Slack API.
One thread gets a request and then 30 replies at once; meanwhile mentions arrive in other threads, one every
200 ms. Printed: the time from sending each of those mentions to the bot's first message in its thread (median,
p95), against the goal p95 ≤ 2 s, and how many of the burst's runs were still queued when the last one arrived.
Quick (`main(quick=True)`): a burst of 5 and 3 other threads, nothing judged."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bench import goals
from bench.pg import PostgresUnavailable, scratch_database
from testkit.fakes.slack_server import SlackServer
from testkit.slack import BotProcess, WorkerProcess, event_body, in_thread, mention, message, new_ts, post, text_of
from testkit.wait import wait_until
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

BURST, OTHERS = 30, 20
QUICK_BURST, QUICK_OTHERS = 5, 3
GAP_SECONDS = 0.2
GOAL_P95_SECONDS = 2.0
REQUEST = "signal ma_cross 600519.SH 20190101 20200601"
WORKING = ":hourglass_flowing_sand: working…"


def _first_post_at(slack: SlackServer, channel: str, root: str) -> float | None:
    """When the bot's first message reached the thread (time.monotonic, as the fake recorded it)."""
    calls = [c for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c)]
    return calls[0].at if calls else None


def _measure(slack: SlackServer, url: str, data: Path, burst: int, others: int) -> tuple[list[float], int]:
    listener = BotProcess(slack.url, url, data / "serve", QUANTDESK_IN_PROCESS_WORKER="false")
    workers = [WorkerProcess.start(slack.url, url, data / f"worker{i}") for i in range(2)]
    try:
        for worker in workers:
            wait_until(worker.started, "a worker's start line")
        busy = new_ts()
        post(listener.url, event_body(mention("CBUSY", "UBENCH", REQUEST, busy)), "application/json")
        wait_until(lambda: _first_post_at(slack, "CBUSY", busy), "the busy thread's first message")
        for i in range(burst):
            post(listener.url, event_body(message("CBUSY", "UBENCH", f"fast={2 + i % 3}", new_ts(), thread_ts=busy)),
                 "application/json")
        sent: dict[str, float] = {}
        for i in range(others):
            root = new_ts()
            sent[root] = time.monotonic()
            post(listener.url, event_body(mention(f"COTHER{i}", "UBENCH", REQUEST, root)), "application/json")
            time.sleep(GAP_SECONDS)
        firsts = {root: wait_until(lambda r=root, i=i: _first_post_at(slack, f"COTHER{i}", r),
                                   "another thread's first message", timeout=120)
                  for i, root in enumerate(sent)}
        last_first = max(firsts.values())
        busy_started = sum(1 for c in slack.fake.of("chat.postMessage") if in_thread("CBUSY", busy)(c)
                           and text_of(c) == WORKING and c.at <= last_first)
        return [firsts[root] - sent[root] for root in sent], 1 + burst - busy_started
    finally:
        listener.stop()
        for worker in workers:
            worker.stop()


def main(quick: bool = False) -> None:
    burst, others = (QUICK_BURST, QUICK_OTHERS) if quick else (BURST, OTHERS)
    try:
        with scratch_database() as url, SlackServer() as slack, tempfile.TemporaryDirectory() as tmp:
            engine = make_engine(url)
            upgrade(engine)
            engine.dispose()
            latencies, still_queued = _measure(slack, url, Path(tmp), burst, others)
    except PostgresUnavailable as exc:
        print(f"  skipped: PostgreSQL unavailable ({exc})")
        return
    ordered = sorted(latencies)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    verdict = goals.judge(f"burst: first message p95 <= {GOAL_P95_SECONDS * 1000:.0f} ms", p95 <= GOAL_P95_SECONDS,
                          quick)
    print(f"mention into another thread → the bot's first message there, while {burst} replies to one busy thread "
          f"are queued ({others} mentions, one every {GAP_SECONDS * 1000:.0f} ms; 2 workers × concurrency 2)")
    print(f"  median {statistics.median(ordered) * 1000:7.0f} ms  p95 {p95 * 1000:7.0f} ms  goal p95 ≤ "
          f"{GOAL_P95_SECONDS * 1000:.0f} ms: {verdict}")
    print(f"  the busy thread's runs still queued when the last other thread spoke: {still_queued} of {1 + burst}")


if __name__ == "__main__":
    main()
