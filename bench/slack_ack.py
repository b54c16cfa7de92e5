"""Ack latency of `quantdesk serve`'s Bolt app, in process on SQLite, for 200 signed events sent 50 at a time over
HTTP, beside a bare Bolt app that only acks (the reference, same run): p50, p99, non-2xx, p99 / the bare app's,
threads answered. The embedded default runs its jobs on threads of the same process, so its acks share the
interpreter with 200 graph runs; the goal (p99 <= 2x the bare app's, no non-2xx, every thread answered) is judged
on PostgreSQL, the production setting, by bench/slack_scale, and shown here for comparison. First, the time from a
mention to the bot's first message in its thread and to its clarify question.

`python -m bench slack_ack`; `run(quick=True)`: 20 events, 10 at a time, nothing judged (tests call it)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from slack_bolt import App
from slack_sdk import WebClient

from bench import goals
from bench.slack_load import GOAL_RATIO, Load, answered, fire, meets, sizes
from bot.jobs import start_serve_worker
from bot.slack.app import build_app
from bot.slack.http import make_server
from bot.slack.serve import slack_core
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from testkit.fakes.slack_server import SlackServer
from testkit.slack import SECRET, event_body, mention, post
from tools.settings import Settings

ANSWER_TIMEOUT, QUICK_ANSWER_TIMEOUT = 300.0, 30.0  # seconds to wait for every thread's first post


def _first_message(slack: SlackServer, url: str) -> tuple[float, float]:
    """Seconds from one mention to the bot's first message in its thread, and to its clarify question."""
    channel, ts = "CFIRST", f"{time.time():.6f}"
    started = time.perf_counter()
    post(url, event_body(mention(channel, "UBENCH", "signal rsi 600519.SH", ts)), "application/json")
    slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("thread_ts") == ts)
    first = time.perf_counter() - started
    slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("thread_ts") == ts
                        and "question" in str(c.args.get("blocks")))
    return first, time.perf_counter() - started


def run(quick: bool = False) -> tuple[Load, Load, int]:
    """Print the first-message times and the ack table; return the bare app's load, QuantDesk's, threads answered."""
    events, concurrency = sizes(quick)
    with SlackServer() as slack, tempfile.TemporaryDirectory() as tmp:
        settings = Settings(SLACK_BOT_TOKEN="xoxb-bench", SLACK_SIGNING_SECRET=SECRET, SLACK_API_URL=slack.url,
                            QUANTDESK_DATA_DIR=tmp, DATABASE_URL=f"sqlite:///{Path(tmp) / 'bench.db'}")
        ctx = build_context(settings)
        with open_checkpointer(settings.database_url_value) as checkpointer:
            core = slack_core(ctx, checkpointer)
            app = build_app(settings, core.surface.client, core)  # type: ignore[attr-defined]
            worker = start_serve_worker(core.queue, core)  # runs are jobs: without a worker nothing is posted
            bare_app = App(name="bare", client=WebClient(token="xoxb-bench", base_url=slack.url), signing_secret=SECRET)
            bare_app.event("app_mention")(lambda: None)
            servers = [make_server(app, "127.0.0.1", 0), make_server(bare_app, "127.0.0.1", 0)]
            for server in servers:
                server.serve_in_thread()
            quant_url, bare_url = (f"http://127.0.0.1:{s.port}/slack/events" for s in servers)
            try:
                first, question = _first_message(slack, quant_url)
                bare = fire(bare_url, "1", events, concurrency)
                quant = fire(quant_url, "2", events, concurrency)
                count = answered(slack, quant.threads, QUICK_ANSWER_TIMEOUT if quick else ANSWER_TIMEOUT)
            finally:
                for server in servers:
                    server.shutdown()
                if worker is not None:
                    worker.stop()
    print(f"mention → first bot message in the thread {first * 1000:.0f} ms; → clarify question "
          f"{question * 1000:.0f} ms (no generated code runs before the question)")
    print(f"ack latency, {events} signed app_mention events, {concurrency} at a time (QuantDesk also starts {events} "
          f"runs meanwhile); reference: the bare Bolt app in this run; goal, judged on PostgreSQL (slack_scale): "
          f"p99 <= {GOAL_RATIO:.0f}x the bare app's, 0 non-2xx, every thread answered")
    print(f"  {'':15} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8} {'p99/bare':>9} {'answered':>9}  goal")
    print(f"  {'bare Bolt app':15} {bare.percentile(0.5):8.1f} {bare.percentile(0.99):8.1f} {bare.bad:8d} "
          f"{1.0:8.2f}x {'-':>9}  -")
    print(f"  {'QuantDesk':15} {quant.percentile(0.5):8.1f} {quant.percentile(0.99):8.1f} {quant.bad:8d} "
          f"{quant.percentile(0.99) / bare.percentile(0.99):8.2f}x {f'{count}/{events}':>9}  "
          f"{_compared(quant, bare, count, quick)} (SQLite, for comparison)")
    return bare, quant, count


def _compared(quant: Load, bare: Load, count: int, quick: bool) -> str:
    """Where QuantDesk stands against the goal on SQLite: shown, not judged (slack_scale judges it on PostgreSQL)."""
    if quick:
        return goals.NOT_JUDGED
    return "met" if meets(quant, bare, count) else "missed"


def main(quick: bool = False) -> None:
    run(quick)


if __name__ == "__main__":
    main()
