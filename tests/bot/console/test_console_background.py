"""A `quantdesk chat` session left open does the background work Slack's `serve` does (issue 24): a scheduled rule
saved in the console runs when its tick is due, and an order whose session's bar has arrived fills and is said,
with no line typed. The console runs through the real core, its in-process queue and background service."""

from __future__ import annotations

import io
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from bot.console.session import run_console
from bot.startup import build_context
from bot.stores.threads import ThreadRegistry
from bot.surfaces import CONSOLE_CHANNEL, CONSOLE_TEAM
from graphs.checkpointer import open_checkpointer
from testkit.rules import add_scheduled
from testkit.wait import wait_until
from tools.access.login import os_login
from tools.broker.clock import SHANGHAI
from tools.broker.orders import OrderRequest
from tools.broker.paper import PaperBroker, PaperConfig
from tools.data.local import LocalProvider
from tools.rules.store import RuleStore
from tools.settings import Settings

CODE = "600000.SH"
BAR = {"ts_code": CODE, "high": 10.4, "low": 9.8, "close": 10.2, "pre_close": 10.0, "vol": 1000.0, "amount": 1000.0}
NOW = datetime(2024, 10, 8, 9, 30, 20, tzinfo=SHANGHAI)  # a Tuesday (the first session after National Day)


def _write(folder: Path, days: dict[str, float]) -> None:
    pd.DataFrame([{**BAR, "trade_date": day, "open": price} for day, price in days.items()]).to_csv(
        folder / "daily.csv", index=False)


def test_an_open_console_runs_a_due_rule_and_fills_a_due_order_unasked(tmp_path: Path) -> None:
    data = tmp_path / "market"
    data.mkdir()
    _write(data, {"20240927": 10.0, "20240930": 10.0})
    url = f"sqlite:///{tmp_path / 'q.db'}"
    settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "home"),
                        QUANTDESK_DATA_PROVIDER="local", QUANTDESK_LOCAL_DATA=str(data), OPENAI_API_KEY=None,
                        OPENAI_BASE_URL=None)
    ctx = build_context(settings)
    user = os_login()
    thread = ThreadRegistry(ctx.engine).open(CONSOLE_TEAM, CONSOLE_CHANNEL, "earlier-session", user)[0].thread_id
    morning = datetime(2024, 10, 8, 8, 0, tzinfo=SHANGHAI)  # before the open: the order waits for 20241008's bar
    order = PaperBroker(ctx.engine, LocalProvider(data), CONSOLE_CHANNEL, PaperConfig.from_settings(settings),
                        now=lambda: morning).submit(OrderRequest("earlier:o1", CODE, "buy", 1000, thread_id=thread,
                                                                 approved_by=user))
    assert (order.status, order.session_date) == ("open", "20241008")
    rules = RuleStore(ctx.engine, frozenset(), clock=lambda: morning.astimezone(UTC))
    rule = add_scheduled(rules, user, CONSOLE_CHANNEL, CODE, "buy when close > ma(30); sell when close < ma(30)",
                         "30 9 * * 1-5", source="language", size=100)
    _write(data, {"20240927": 10.0, "20240930": 10.0, "20241008": 10.5})  # the session's bar arrives

    reader, writer = os.pipe()
    out = io.StringIO()
    with open_checkpointer(url) as saver, open(reader) as stdin:
        session = threading.Thread(target=run_console, args=(ctx, saver, stdin, out, lambda: NOW.astimezone(UTC)))
        session.start()
        try:
            wait_until(lambda: "Order 1 filled" in out.getvalue(), "the console to fill the due order", 120)
            wait_until(lambda: rules.steps(rule.id), "the console to run the due rule", 120)
            wait_until(lambda: f"\nRule {rule.id} ({CODE}): HOLD\n" in out.getvalue(),
                       "the scheduled run's report in the console", 120)
        finally:
            os.close(writer)  # end of input: the session ends
            session.join(60)
    printed = out.getvalue()
    assert f"Rule {rule.id} ({CODE}): scheduled run for 2024-10-08 01:30 UTC, owner {user}" in printed
    assert "Order 1 filled: BUY 1,000 600000.SH at 10.50 on 20241008 (filled at the open of 20241008)" in printed
    assert {s.execution_id for s in rules.steps(rule.id)} == {f"rule{rule.id}-20241008T0130Z"}
    assert not session.is_alive()
