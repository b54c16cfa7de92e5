"""Reconciliation against a real VeighNa RPC server (testkit/vnpy.py), through the console's real core and
background service: a position the broker holds that the desk's fills do not make is posted to the account's
channel (the console's) in a thread of its own once it is seen on two passes in a row, with what to check; it is
posted once, and a new difference is posted again. Nothing in the book changes."""

from __future__ import annotations

import io
from pathlib import Path

from bot.console.session import open_session
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from testkit.vnpy import vnpy_server
from testkit.wait import wait_until
from tools.broker.book import book_orders
from tools.settings import Settings

TITLE = "(Reconciliation: account console differs from its broker in 1 position)"
HELD = "reconciliation: the broker holds 500 of 000001.SZ, QuantDesk's fills make 0"


def test_a_difference_with_the_broker_is_posted_to_the_accounts_channel_once(tmp_path: Path) -> None:
    with vnpy_server(tmp_path / "trader", "zh_CN") as server:
        server.call("set_position", "000001", "SZSE", 500.0, 500.0, 12.5)
        url = f"sqlite:///{tmp_path / 'q.db'}"
        settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "home"),
                            QUANTDESK_DATA_PROVIDER="sample", QUANTDESK_BROKER="vnpy",
                            QUANTDESK_VNPY_REQ_ADDRESS=server.req, QUANTDESK_VNPY_SUB_ADDRESS=server.pub,
                            OPENAI_API_KEY=None, OPENAI_BASE_URL=None)
        ctx = build_context(settings)
        out = io.StringIO()
        with open_checkpointer(url) as saver:
            session = open_session(ctx, saver, out)
            try:
                assert session.background.wait_first_pass(60)
                session.console.handle("account")  # the account is opened: its notes say what differs
                wait_until(lambda: HELD in out.getvalue(), "the difference on the account's notes", 60,
                           seen=out.getvalue)
                background = session.background
                background.run_jobs(force=True)  # seen once: it may be a fill on its way into the book
                assert TITLE not in out.getvalue()
                background.run_jobs(force=True)  # seen again: posted
                wait_until(lambda: "Nothing was changed: check the account at the broker" in out.getvalue(),
                           "the reconciliation's thread", 120, seen=out.getvalue)
                background.run_jobs(force=True)
                assert out.getvalue().count(TITLE) == 1  # once
                server.call("set_position", "000001", "SZSE", 800.0, 800.0, 12.5)
                background.run_jobs(force=True)
                background.run_jobs(force=True)
                wait_until(lambda: "the broker holds 800 of 000001.SZ" in out.getvalue().split(TITLE, 2)[-1]
                           and out.getvalue().count(TITLE) == 2, "the new difference posted", 120,
                           seen=out.getvalue)
            finally:
                session.close()
        assert book_orders(ctx.engine, "console", "all", "") == ()  # nothing booked or overwritten
