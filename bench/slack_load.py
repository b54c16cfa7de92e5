"""Signed app_mention events fired concurrently at a Bolt app over HTTP, and the figures the Slack benches print
(ack percentiles, non-2xx answers, threads the bot answered), judged against the ratio goal to the bare app."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from bench import goals
from testkit.fakes.slack_server import SlackServer
from testkit.slack import event_body, mention, post

EVENTS, CONCURRENCY = 200, 50
QUICK_EVENTS, QUICK_CONCURRENCY = 20, 10
GOAL_RATIO = 2.0  # ack p99 at most this many times the bare Bolt app's in the same run
REQUEST = "signal rsi 600519.SH"


def sizes(quick: bool) -> tuple[int, int]:
    """How many mentions to send, and how many at once."""
    return (QUICK_EVENTS, QUICK_CONCURRENCY) if quick else (EVENTS, CONCURRENCY)


@dataclass(frozen=True)
class Load:
    """What one app answered to a batch of mentions: ack latencies (s), non-2xx answers, the mentions' threads."""

    latencies: list[float]
    bad: int
    threads: list[tuple[str, str]]

    def percentile(self, q: float) -> float:
        """The q-quantile of the ack latencies, in ms (nearest rank)."""
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))] * 1000


def fire(url: str, prefix: str, events: int, concurrency: int) -> Load:
    """Send `events` signed mentions (20 channels), `concurrency` at a time; a reset or refusal counts as non-2xx."""
    threads = [(f"C{prefix}{i % 20}", f"{1910000000 + i}.000{prefix}") for i in range(events)]

    def send(thread: tuple[str, str]) -> tuple[float, int]:
        body = event_body(mention(thread[0], "UBENCH", REQUEST, thread[1]))
        started = time.perf_counter()
        try:
            status, _ = post(url, body, "application/json")
        except OSError:
            status = 0
        return time.perf_counter() - started, status

    with ThreadPoolExecutor(concurrency) as pool:
        answers = list(pool.map(send, threads))
    return Load([t for t, _ in answers], sum(1 for _, s in answers if not 200 <= s < 300), threads)


def answered(slack: SlackServer, threads: list[tuple[str, str]], timeout: float) -> int:
    """How many of `threads` got the bot's first post within `timeout` seconds (polled on the fake's record)."""
    deadline = time.monotonic() + timeout
    while True:
        posted = {(c.args.get("channel"), c.args.get("thread_ts")) for c in slack.fake.of("chat.postMessage")}
        count = sum(1 for thread in threads if thread in posted)
        if count == len(threads) or time.monotonic() >= deadline:
            return count
        time.sleep(0.1)


def meets(load: Load, bare: Load, answered_count: int | None) -> bool:
    """The goal: p99 within GOAL_RATIO of the reference's, no non-2xx, every thread answered (None: not counted)."""
    ok = load.percentile(0.99) <= GOAL_RATIO * bare.percentile(0.99) and load.bad == 0
    return ok and answered_count in (None, len(load.threads))


def verdict(name: str, load: Load, bare: Load, answered_count: int | None, quick: bool) -> str:
    """'met' or 'MISSED' for `name`'s row against the goal (bench/goals.py); quick runs are not judged."""
    return goals.judge(f"{name}: ack p99 <= {GOAL_RATIO:.0f}x the reference's, 0 non-2xx, every thread answered",
                       meets(load, bare, answered_count), quick)

