"""The Slack front door under load: 200 signed app_mention events, 50 at a time, at a real `quantdesk serve`
process (on SQLite, then on PostgreSQL; its in-process worker starting every run meanwhile) and, in the same
run, at a bare Bolt app
with a no-op listener behind the same HTTP server (bot/slack/http.py). p50/p95/p99 ack latency and non-2xx
answers side by side, against the goal: p99 ≤ 250 ms and no non-2xx."""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from slack_bolt import App
from slack_sdk import WebClient

from bench.pg import PostgresUnavailable, scratch_database
from bench.slack_ack import CONCURRENCY, EVENTS
from bot.slack.http import make_server, serve_in_thread
from tests.fakes.slack_server import SlackServer
from tests.slack_harness import SECRET, BotProcess, event_body, mention, post
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

GOAL_P99_MS = 250.0


def _fire(url: str, prefix: str) -> tuple[list[float], int]:
    """Ack latencies (s) of EVENTS signed mentions, CONCURRENCY at a time, and how many were not 2xx."""
    bodies = [event_body(mention(f"C{prefix}{i % 20}", "UBENCH", "signal rsi 600519.SH",
                                 f"{1910000000 + i}.000{prefix}")) for i in range(EVENTS)]

    def send(body: str) -> tuple[float, int]:
        started = time.perf_counter()
        try:
            status, _ = post(url, body, "application/json")
        except OSError:
            status = 0  # reset or refused: counted with the non-2xx
        return time.perf_counter() - started, status

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        answers = list(pool.map(send, bodies))
    return [t for t, _ in answers], sum(1 for _, s in answers if not 200 <= s < 300)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))] * 1000


def _serve_on(database_url: str, data_dir: Path, slack_url: str, prefix: str) -> tuple[list[float], int]:
    """Fire at a `quantdesk serve` process (with its in-process worker) on `database_url`."""
    if database_url.startswith("postgresql"):
        engine = make_engine(database_url)
        upgrade(engine)
        engine.dispose()
    bot = BotProcess(slack_url, database_url, data_dir)
    try:
        return _fire(bot.url, prefix)
    finally:
        bot.stop()


def main() -> None:
    with SlackServer() as slack, tempfile.TemporaryDirectory() as tmp:
        bare = App(client=WebClient(token="xoxb-bench", base_url=slack.url), signing_secret=SECRET)
        bare.event("app_mention")(lambda: None)
        server = make_server(bare, "127.0.0.1", 0)
        serve_in_thread(server)
        bare_url = f"http://127.0.0.1:{server.port}/slack/events"
        try:
            rows = [("bare Bolt app", *_fire(bare_url, "1")),
                    ("serve, SQLite", *_serve_on(f"sqlite:///{Path(tmp) / 'bench.db'}", Path(tmp), slack.url, "2"))]
            try:
                with scratch_database() as url:
                    rows.append(("serve, PostgreSQL", *_serve_on(url, Path(tmp) / "pg", slack.url, "3")))
            except PostgresUnavailable as exc:
                print(f"PostgreSQL row skipped: {exc}")
        finally:
            server.shutdown()
    print(f"ack latency, {EVENTS} signed app_mention events, {CONCURRENCY} at a time; goal p99 ≤ {GOAL_P99_MS:.0f} ms "
          "and zero non-2xx")
    print(f"  {'':18} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'non-2xx':>8}  goal")
    for name, latencies, bad in rows:
        p50, p95, p99 = (_percentile(latencies, q) for q in (0.50, 0.95, 0.99))
        verdict = "met" if p99 <= GOAL_P99_MS and bad == 0 else "MISSED"
        print(f"  {name:18} {p50:8.1f} {p95:8.1f} {p99:8.1f} {bad:8d}  {verdict}")


if __name__ == "__main__":
    main()
