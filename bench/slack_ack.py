"""Ack latency of `quantdesk serve`'s Bolt app (median, p99) for 200 signed events sent concurrently over HTTP, beside
a bare Bolt app that only acks, in the same run; and the time from a mention to the bot's first message."""

from __future__ import annotations

import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from slack_bolt import App
from slack_sdk import WebClient

from bot.context import build_context
from bot.jobs import start_serve_worker
from bot.slack.app import build_app
from bot.slack.http import make_server, serve_in_thread
from bot.slack.serve import slack_core
from graphs.checkpointer import open_checkpointer
from tests.fakes.slack_server import SlackServer
from tests.slack_harness import SECRET, event_body, mention, post
from tools.settings import Settings

EVENTS = 200
CONCURRENCY = 50


def _latencies(url: str, prefix: str) -> list[float]:
    bodies = [event_body(mention(f"C{prefix}{i % 20}", "UBENCH", "signal rsi 600519.SH",
                                 f"{1900000000 + i}.000{prefix}")) for i in range(EVENTS)]

    def send(body: str) -> float:
        started = time.perf_counter()
        status, _ = post(url, body, "application/json")
        if status != 200:
            raise RuntimeError(f"HTTP {status}")
        return time.perf_counter() - started

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        return list(pool.map(send, bodies))


def _summary(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.99) - 1] * 1000


def main() -> None:
    with SlackServer() as slack, tempfile.TemporaryDirectory() as tmp:
        settings = Settings(SLACK_BOT_TOKEN="xoxb-bench", SLACK_SIGNING_SECRET=SECRET, SLACK_API_URL=slack.url,
                            QUANTDESK_DATA_DIR=tmp, DATABASE_URL=f"sqlite:///{Path(tmp) / 'bench.db'}")
        ctx = build_context(settings)
        with open_checkpointer(settings.database_url_value) as checkpointer:
            core = slack_core(ctx, checkpointer)
            app = build_app(settings, core.surface.client, core)  # type: ignore[attr-defined]
            worker = start_serve_worker(core.queue, core)  # runs are jobs: without a worker nothing is posted
            bare = App(client=WebClient(token="xoxb-bench", base_url=slack.url), signing_secret=SECRET)
            bare.event("app_mention")(lambda: None)
            servers = [make_server(app, "127.0.0.1", 0), make_server(bare, "127.0.0.1", 0)]
            for server in servers:
                serve_in_thread(server)
            quant_url, bare_url = (f"http://127.0.0.1:{s.port}/slack/events" for s in servers)
            channel, ts = "CFIRST", f"{time.time():.6f}"
            started = time.perf_counter()
            post(quant_url, event_body(mention(channel, "UBENCH", "signal rsi 600519.SH", ts)), "application/json")
            slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("thread_ts") == ts)
            first = time.perf_counter() - started
            slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("thread_ts") == ts
                                and "question" in str(c.args.get("blocks")))
            question = time.perf_counter() - started
            print(f"mention → first bot message in the thread {first * 1000:.0f} ms; → clarify question "
                  f"{question * 1000:.0f} ms (no generated code runs before the question)")
            bare_ms = _summary(_latencies(bare_url, "1"))
            quant_ms = _summary(_latencies(quant_url, "2"))
            print(f"ack latency, {EVENTS} signed app_mention events, {CONCURRENCY} at a time "
                  "(QuantDesk also starts 200 runs meanwhile)")
            print(f"  bare Bolt app   median {bare_ms[0]:7.1f} ms   p99 {bare_ms[1]:7.1f} ms")
            print(f"  QuantDesk       median {quant_ms[0]:7.1f} ms   p99 {quant_ms[1]:7.1f} ms"
                  f"   ratio {quant_ms[0] / bare_ms[0]:.2f}x (median), {quant_ms[1] / bare_ms[1]:.2f}x (p99)")
            for server in servers:
                server.shutdown()
            if worker is not None:
                worker.stop()
