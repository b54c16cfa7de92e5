"""Ack latency of the Feishu surface's HTTP callbacks, in process on SQLite against the fake Feishu Open API: 200
encrypted, signed `im.message.receive_v1` mentions sent 50 at a time (each starts a run on the same process's worker
threads meanwhile): p50, p99 and the slowest answer, non-2xx answers, answers over Feishu's 3 s callback window, and
threads answered. Goal: every callback answered within 3 s, none refused, every thread answered.

`python -m bench feishu_ack`; `run(quick=True)`: 20 callbacks, 10 at a time, nothing judged (tests call it)."""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench import goals
from bench.slack_load import Load, sizes
from bot.feishu.callbacks import Callbacks
from bot.feishu.http import PATH, HttpListener
from bot.feishu.serve import feishu_core
from bot.feishu.surface import FeishuSurface
from bot.jobs import start_serve_worker
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from testkit.fakes.feishu_server import BOT_OPEN_ID, FeishuServer
from testkit.feishu import APP_ID, APP_SECRET, ENCRYPT_KEY, VERIFICATION_TOKEN, deliver, message_event
from tools.settings import Settings

WINDOW_SECONDS = 3.0  # Feishu's callback window
REQUEST = "signal rsi 600519.SH"
ANSWER_TIMEOUT, QUICK_ANSWER_TIMEOUT = 300.0, 30.0  # seconds to wait for every thread's first reply


def fire(url: str, callbacks: int, concurrency: int) -> Load:
    """Send `callbacks` encrypted, signed mentions (20 chats), `concurrency` at a time; a refusal counts as non-2xx."""
    threads = [(f"oc_bench_{i % 20}", f"om_bench_{i:06d}") for i in range(callbacks)]

    def send(thread: tuple[str, str]) -> tuple[float, int]:
        started = time.perf_counter()
        try:
            status, _answer = deliver(url, message_event(thread[0], "ou_bench", REQUEST, thread[1]))
        except OSError:
            status = 0
        return time.perf_counter() - started, status

    with ThreadPoolExecutor(concurrency) as pool:
        answers = list(pool.map(send, threads))
    return Load([t for t, _ in answers], sum(1 for _, s in answers if not 200 <= s < 300), threads)


def answered(feishu: FeishuServer, threads: list[tuple[str, str]], timeout: float) -> int:
    """How many of `threads` got the bot's first reply within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    roots = {root for _chat, root in threads}
    while True:
        count = len(roots & {c.args.get("_message_id") for c in feishu.fake.of("im.message.reply") if c.ok})
        if count == len(roots) or time.monotonic() >= deadline:
            return count
        time.sleep(0.1)


def run(quick: bool = False) -> tuple[Load, int]:
    """Print the ack table; return the load and how many threads were answered."""
    callbacks, concurrency = sizes(quick)
    with FeishuServer() as feishu, tempfile.TemporaryDirectory() as tmp:
        settings = Settings(FEISHU_APP_ID=APP_ID, FEISHU_APP_SECRET=APP_SECRET, FEISHU_DOMAIN=feishu.url,
                            FEISHU_VERIFICATION_TOKEN=VERIFICATION_TOKEN, FEISHU_ENCRYPT_KEY=ENCRYPT_KEY,
                            QUANTDESK_DATA_DIR=tmp, DATABASE_URL=f"sqlite:///{Path(tmp) / 'bench.db'}")
        with open_checkpointer(settings.database_url_value) as checkpointer:
            core = feishu_core(build_context(settings), checkpointer)
            assert isinstance(core.surface, FeishuSurface)
            handlers = Callbacks(core, core.surface, BOT_OPEN_ID)
            worker = start_serve_worker(core.queue, core)  # runs are jobs: without a worker nothing is posted
            server = HttpListener(handlers.dispatcher(ENCRYPT_KEY, VERIFICATION_TOKEN), handlers.after, "127.0.0.1",
                                  0)
            server.serve_in_thread()
            try:
                load = fire(f"http://127.0.0.1:{server.port}{PATH}", callbacks, concurrency)
                count = answered(feishu, load.threads, QUICK_ANSWER_TIMEOUT if quick else ANSWER_TIMEOUT)
            finally:
                server.shutdown()
                if worker is not None:
                    worker.stop()
    late = sum(1 for t in load.latencies if t > WINDOW_SECONDS)
    ok = late == 0 and load.bad == 0 and count == callbacks
    verdict = goals.judge(f"feishu_ack: every callback answered within {WINDOW_SECONDS:.0f} s, 0 non-2xx, every "
                          "thread answered", ok, quick)
    print(f"ack latency, {callbacks} encrypted, signed im.message.receive_v1 callbacks, {concurrency} at a time (each "
          f"starts a run meanwhile); goal: every one within Feishu's {WINDOW_SECONDS:.0f} s, 0 non-2xx, every thread "
          "answered")
    print(f"  {'':10} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'non-2xx':>8} {'over 3 s':>9} {'answered':>9}  goal")
    print(f"  {'QuantDesk':10} {load.percentile(0.5):8.1f} {load.percentile(0.99):8.1f} "
          f"{max(load.latencies) * 1000:8.1f} {load.bad:8d} {late:9d} {f'{count}/{callbacks}':>9}  {verdict}")
    return load, count


def main(quick: bool = False) -> None:
    run(quick)


if __name__ == "__main__":
    main()
