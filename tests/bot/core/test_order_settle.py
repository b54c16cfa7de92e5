"""Live data: an approved order waits for its session, and the settle job fills it at that session's open once
the bar exists and posts the fill into the order's thread, once. The clock is fixed at the National Day week
of 2024 (last bar 2024-09-30, reopening 2024-10-08), so the account runs live on a holiday-shortened week."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.jobs import Message
from bot.slack.serve import slack_core
from bot.startup import build_context
from bot.stores.threads import thread_id_for
from graphs.checkpointer import open_checkpointer
from testkit.fakes.slack_server import TEAM, SlackServer
from testkit.slack import in_thread, run_background_job, text_of
from tools.broker.clock import SHANGHAI
from tools.broker.orders import OrderRequest
from tools.broker.paper import PaperBroker
from tools.broker.records import PaperFill
from tools.data.local import LocalProvider
from tools.settings import Settings

TRADER = "UTRADER"
BAR = {"ts_code": "600000.SH", "open": 10.0, "high": 10.4, "low": 9.8, "close": 10.2, "pre_close": 10.0,
       "vol": 1000.0, "amount": 1000.0}


def _write(folder: Path, days: dict[str, float]) -> None:
    rows = [{**BAR, "trade_date": d, "open": o} for d, o in days.items()]
    pd.DataFrame(rows).to_csv(folder / "daily.csv", index=False)


def _at(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=SHANGHAI)


def test_the_settle_job_fills_at_the_sessions_open_and_posts_it_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    _write(data, {"20240927": 10.0, "20240930": 10.0})
    url = f"sqlite:///{tmp_path / 'q.db'}"
    with SlackServer() as slack:
        settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path),
                            QUANTDESK_DATA_PROVIDER="local", QUANTDESK_LOCAL_DATA=str(data), OPENAI_API_KEY=None,
                            OPENAI_BASE_URL=None, SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET="secret",
                            SLACK_API_URL=slack.url, QUANTDESK_TRADERS=TRADER)
        app = build_context(settings)
        with open_checkpointer(url) as saver:
            door = slack_core(app, saver)
            ctx = door.runner.context
            morning = _at("2024-10-08 08:00")
            ctx.broker = lambda name, by: PaperBroker(app.engine, ctx.provider, name, ctx.paper, now=lambda: morning,
                                                      opened_by=by)
            channel, root = "C9100", "1727740000.000100"
            door.run_text(Message(f"msg:{channel}:{root}", TEAM, channel, root, "UALICE",
                                  "order 600000.SH buy 1000"))
            thread = thread_id_for(TEAM, channel, root)
            (pending,) = door.runner.pending(thread)
            assert "fills at the open of 20241008" in pending.card.args["fills"]
            # the approval itself is covered elsewhere (tests/graphs/test_order_graph.py); place what it would place
            order = ctx.broker("C9100", None).submit(OrderRequest(f"{thread}:o1", "600000.SH", "buy", 1000,
                                                                  thread_id=thread, approved_by=TRADER))
            assert (order.status, order.session_date) == ("open", "20241008")

            run_background_job(door, "order settlement", _at("2024-10-08 12:00"))  # the session's bar is not there
            _write(data, {"20240927": 10.0, "20240930": 10.0, "20241008": 10.5})
            ctx.provider = LocalProvider(data)  # the provider that sees the new bar
            run_background_job(door, "order settlement", _at("2024-10-08 16:00"))
            run_background_job(door, "order settlement", _at("2024-10-08 16:01"))  # nothing left: nothing twice
            with Session(app.engine) as session:
                fills = session.scalars(select(PaperFill)).all()
            assert [(f.quantity, f.price_fen, f.trade_date) for f in fills] == [(1000, 1050, "20241008")]
            posts = [c for c in slack.fake.of("chat.postMessage")
                     if in_thread(channel, root)(c) and text_of(c).startswith("Order ")]
            assert len(posts) == 1
            # fees: commission max(5, 10,500 × 0.025 % = 2.625) = 5.00; transfer 10,500 × 0.001 % = 0.105 → 0.11
            assert text_of(posts[0]) == (f"Order {order.id} filled: BUY 1,000 600000.SH at 10.50 on 20241008 (filled "
                                         "at the open of 20241008); value 10,500.00, fees 5.11.")
