"""Idle connections at the door: QuantDesk's Bolt app (on SQLite, in process) behind `serve`'s HTTP listener
(bot/slack/http.py) takes 200 signed app_mention events, 50 at a time, with no other connection open (the
reference, same run), then again while 6,000 idle connections are held open (half of them stalled inside a
request head, as half-open clients and slow readers are). No worker runs, so the runs are only queued and the
figures are the listener's and the ack's alone. Per row: p50/p99 ack latency, non-2xx answers, p99 / the
reference's, and how many idle connections were still open after the mentions. Goal: every mention acked, p99 <=
2x the reference's, every idle connection still held. (waitress, before, stopped accepting at its 1,000-connection
limit and walked every connection in Python on each turn of its loop: 87 s without an ack.)

`python -m bench slack_idle`; `run(quick=True)`: 1,500 idle connections, 20 events 10 at a time, nothing judged
(tests call it)."""

from __future__ import annotations

import resource
import socket
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench import goals
from bench.slack_load import GOAL_RATIO, REQUEST, Load, fire, sizes
from bot.slack.app import build_app
from bot.slack.http import make_server
from bot.slack.serve import slack_core
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from testkit.fakes.slack_server import SlackServer
from testkit.slack import SECRET, event_body, mention, post
from tools.settings import Settings

IDLE, QUICK_IDLE = 6_000, 1_500
STALLED_HEAD = b"POST /slack/events HTTP/1.1\r\nHost: quantdesk\r\nContent-Type: application/json\r\n"
SPARE_FILES = 500  # open files the process needs besides the idle connections' two ends


@dataclass(frozen=True)
class Result:
    reference: Load  # the mentions with no other connection open
    idle: Load  # the same, while the idle connections are held
    opened: int
    held: int  # idle connections still open after the mentions
    open_s: float  # seconds to open them all and see the listener take them

    def ok(self) -> bool:
        """Every mention acked, p99 within GOAL_RATIO of the reference's, every idle connection held throughout."""
        within = self.idle.percentile(0.99) <= GOAL_RATIO * self.reference.percentile(0.99)
        return within and self.idle.bad == 0 and self.held == self.opened


def still_open(sock: socket.socket) -> bool:
    """Whether the server has neither closed nor reset this connection (nothing is read from it)."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


@contextmanager
def idle_connections(port: int, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections to the listener, every other one stalled inside a request head, yielded once the
    listener has taken them all (it answers a health check queued behind them); closed on exit."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 2 * count + SPARE_FILES:
        raise RuntimeError(f"open-file limit {soft}: {count} idle connections need {2 * count + SPARE_FILES} "
                           "(both ends are in this process); raise the hard limit (ulimit -Hn)")
    held: list[socket.socket] = []
    try:
        for n in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            held.append(sock)
            if n % 2:
                sock.sendall(STALLED_HEAD)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=60) as answer:
            answer.read()
        yield held
    finally:
        for sock in held:
            sock.close()


def run(quick: bool = False) -> Result:
    """Fire the mentions without and then with the idle connections; print and return the figures."""
    events, concurrency = sizes(quick)
    count = QUICK_IDLE if quick else IDLE
    with SlackServer() as slack, tempfile.TemporaryDirectory() as tmp:
        settings = Settings(SLACK_BOT_TOKEN="xoxb-bench", SLACK_SIGNING_SECRET=SECRET, SLACK_API_URL=slack.url,
                            QUANTDESK_DATA_DIR=tmp, DATABASE_URL=f"sqlite:///{Path(tmp) / 'bench.db'}")
        ctx = build_context(settings)
        with open_checkpointer(settings.database_url_value) as checkpointer:
            core = slack_core(ctx, checkpointer)
            server = make_server(build_app(settings, core.surface.client, core),  # type: ignore[attr-defined]
                                 "127.0.0.1", 0)  # raises this process's open-file limit to its hard limit
            server.serve_in_thread()
            url = f"http://127.0.0.1:{server.port}/slack/events"
            try:
                for n in range(concurrency):  # warm-up: the first acks build what later ones reuse
                    post(url, event_body(mention("CWARM", "UBENCH", REQUEST, f"{1900000000 + n}.0009")),
                         "application/json")
                reference = fire(url, "1", events, concurrency)
                started = time.perf_counter()
                with idle_connections(server.port, count) as held:
                    open_s = time.perf_counter() - started
                    idle = fire(url, "2", events, concurrency)
                    result = Result(reference, idle, len(held), sum(map(still_open, held)), open_s)
            finally:
                server.shutdown()
    _print(result, events, concurrency, quick)
    return result


def _print(result: Result, events: int, concurrency: int, quick: bool) -> None:
    print(f"ack latency, {events} signed app_mention events, {concurrency} at a time, with {result.opened:,} idle "
          f"connections held (opened and taken in {result.open_s:.1f} s; every other one stalled inside a request "
          f"head); reference: the same mentions with none open, this run; goal: every mention acked, p99 <= "
          f"{GOAL_RATIO:.0f}x the reference's, every idle connection held")
    print(f"  {'':26} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8} {'p99/ref':>8} {'idle held':>11}  goal")
    ref = result.reference.percentile(0.99)
    for label, load in (("no idle connections", result.reference), (f"{result.opened:,} idle connections",
                                                                     result.idle)):
        reference_row = load is result.reference
        held = "-" if reference_row else f"{result.held}/{result.opened}"
        verdict = "-" if reference_row else goals.judge(
            f"acks beside {result.opened:,} idle connections: all acked, p99 <= {GOAL_RATIO:.0f}x, all held",
            result.ok(), quick)
        print(f"  {label:26} {load.percentile(0.5):8.1f} {load.percentile(0.99):8.1f} {load.bad:8d} "
              f"{load.percentile(0.99) / ref:7.2f}x {held:>11}  {verdict}")


def main(quick: bool = False) -> None:
    run(quick)


if __name__ == "__main__":
    main()
