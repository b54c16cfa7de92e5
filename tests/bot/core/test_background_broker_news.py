"""A broker's report of an order (a live broker's order or trade event, tools/broker/news.py) runs the jobs it
concerns at once, between two passes of the background service: a fill reaches its card when the broker says so,
not at the settle job's next interval. Jobs it does not concern wait for their interval."""

from __future__ import annotations

import io
from pathlib import Path

from bot.console.session import CONSOLE_SCOPE
from bot.console.surface import ConsoleSurface
from bot.core.background import BackgroundService
from bot.core.wiring import build_core
from bot.jobs.local import LocalJobQueue
from bot.startup import build_context
from graphs.background import BackgroundCall, BackgroundJob, Notice
from graphs.checkpointer import open_checkpointer
from graphs.context import WorkflowContext
from testkit.wait import wait_until
from tools.broker import news
from tools.settings import Settings


def test_a_brokers_report_runs_the_settle_jobs_at_once_and_only_those(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "d"))
    ctx = build_context(settings)
    ran: list[str] = []

    def job(name: str) -> BackgroundJob:
        def run(_context: WorkflowContext, _call: BackgroundCall) -> list[Notice]:
            ran.append(name)
            return []
        return BackgroundJob(3600, run, on_broker_news=name == "settle")

    with open_checkpointer(url) as saver:
        core = build_core(ctx, saver, ConsoleSurface(io.StringIO(), tmp_path / "exports"), CONSOLE_SCOPE,
                          LocalJobQueue(ctx.engine, settings, CONSOLE_SCOPE))
        service = BackgroundService(core, interval=3600, jobs={"settle": job("settle"), "rules": job("rules")})
        service.start()
        try:
            assert service.wait_first_pass(60)
            assert sorted(ran) == ["rules", "settle"]  # the first pass runs every job; the next is an hour away
            news.heard()
            wait_until(lambda: ran.count("settle") == 2, "the settle job on the broker's report", 30, seen=lambda: ran)
            news.heard()
            wait_until(lambda: ran.count("settle") == 3, "the settle job on the next report", 30, seen=lambda: ran)
            assert ran.count("rules") == 1  # not the broker's business: it waits for its interval
        finally:
            service.stop()
