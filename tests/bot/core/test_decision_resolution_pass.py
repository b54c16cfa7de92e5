"""The desk's scheduled resolution (issue 14): due decisions are resolved by a periodic pass even when nobody asks,
once across processes, and the bot's background service posts each resolution into the decision's thread once."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import Engine, func, select

from bot.core import Core
from bot.slack.serve import slack_core
from bot.startup import build_context
from bot.stores.threads import thread_id_for
from graphs.analyze.resolution import resolve_pass
from graphs.checkpointer import open_checkpointer
from testkit.desk import desk_context
from testkit.fakes.slack_server import TEAM, SlackServer
from testkit.slack import run_background_job
from tools.broker.clock import SHANGHAI
from tools.data.local import SampleProvider
from tools.desk.log import list_decisions, record_decision
from tools.desk.records import DeskDecisionOutcome
from tools.sandbox import Sandbox
from tools.settings import Settings
from tools.storage.db import make_engine

CODE = "600519.SH"
# the sample's closes: 600519.SH 1,661.00 on 20200814 → 1,676.00 on 20200821 (five trading days on) = +0.9031 %;
# 000001.SZ 14.47 → 14.45 = −0.1382 %; benchmark (0.9031 − 0.1382) / 2 = +0.3824 %; excess +0.5206 %: a hit
RESOLVED = ("Resolved: Decision on 20200814 rated Buy at 1,661.00; 5 trading days later 1,676.00 (+0.90%), "
            "benchmark +0.38%, excess +0.52%: hit.")


def _decide(engine: Engine, namespace: str, trade_date: str, thread: str) -> str:
    return record_decision(engine, namespace=namespace, ts_code=CODE, trade_date=trade_date,
                           as_of=datetime(int(trade_date[:4]), int(trade_date[4:6]), int(trade_date[6:]), 15,
                                          tzinfo=SHANGHAI),
                           rating="Buy", target_position=Decimal("0.2"), confidence=0.7, price=Decimal("1661.00"),
                           report_ids={}, universe=[CODE, "000001.SZ"], thread_id=thread, summary={})


class RacingProvider(SampleProvider):
    """Each reader of closes waits until `parties` of them have read: every process computes the outcome before
    any stores it, so they all race to insert it."""

    def __init__(self, barrier: threading.Barrier) -> None:
        super().__init__()
        self.barrier = barrier

    def wide(self, *args: Any, **kwargs: Any) -> pd.DataFrame:
        frame = super().wide(*args, **kwargs)
        self.barrier.wait()
        return frame


def test_due_decisions_are_resolved_once_by_racing_processes(db_url: str, engine: Engine, sandbox: Sandbox) -> None:
    namespace = f"test-{uuid.uuid4().hex[:8]}"
    due = _decide(engine, namespace, "20200814", "t-due")
    open_ = _decide(engine, namespace, "20200818", "t-open")  # its exit day, 20200825, is past the data
    other = _decide(engine, f"{namespace}-other", "20200814", "t-other")  # another desk's namespace
    barrier = threading.Barrier(2, timeout=30)
    engines = [make_engine(db_url) for _ in range(2)]  # two processes' own connections
    contexts = [desk_context(e, sandbox, RacingProvider(barrier), None, desk_namespace=namespace) for e in engines]
    try:
        with ThreadPoolExecutor(2) as pool:
            notices = [n for found in pool.map(resolve_pass, contexts) for n in found]
    finally:
        for made in engines:
            made.dispose()
    assert [(n.thread_id, n.key, n.said()) for n in notices] == [("t-due", f"resolution:{due}:5", RESOLVED)]
    with engine.connect() as connection:
        stored = connection.scalar(select(func.count()).select_from(DeskDecisionOutcome)
                                   .where(DeskDecisionOutcome.decision_id.in_([due, open_, other])))
    assert stored == 1
    assert resolve_pass(desk_context(engine, sandbox, SampleProvider(), None, desk_namespace=namespace)) == []
    (logged,) = [d for d in list_decisions(engine, namespace, CODE) if d.id == due]
    assert logged.resolutions[0].hit is True and logged.resolutions[0].excess_return == Decimal("0.0052064372")


@pytest.fixture
def core(tmp_path: Path) -> Iterator[tuple[Core, SlackServer]]:
    """The real core on the Slack surface, on SQLite and the sample data, against the fake Slack Web API."""
    url = f"sqlite:///{tmp_path / 'quantdesk.db'}"
    with SlackServer() as server, open_checkpointer(url) as saver:
        settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "data"),
                            SLACK_BOT_TOKEN="xoxb-test", SLACK_API_URL=server.url)
        yield slack_core(build_context(settings), saver), server


def test_the_background_job_posts_each_resolution_into_its_thread_once(core: tuple[Core, SlackServer]) -> None:
    front, server = core
    front.threads.open(TEAM, "C1", "1700000000.000100", "UALICE")
    thread = thread_id_for(TEAM, "C1", "1700000000.000100")
    _decide(front.queue.engine, front.runner.context.desk_namespace, "20200814", thread)
    run_background_job(front, "decision outcomes")
    run_background_job(front, "decision outcomes")  # a second process, or the next minute: nothing new to say
    posts = [c.args for c in server.fake.of("chat.postMessage") if c.args.get("thread_ts") == "1700000000.000100"]
    assert [p["text"] for p in posts] == [RESOLVED]
