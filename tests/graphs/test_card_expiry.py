"""Expiry a trader expects (issue 29, item 3): on live data a card fills at its session's close and expires when
that session's closing auction starts (14:57 Asia/Shanghai), on the exchange's calendar: made after 14:57 on the
last trading day before National Day 2024 (1-7 October closed), it is for 8 October and expires then, and the card
shows that time. The clock is a fake wall clock; the market a synthetic one ending 30 September."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from decimal import Decimal as D
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from graphs.context import WorkflowContext
from testkit.graph_thread import GraphThread
from testkit.market import RISK, market
from testkit.paper import interrupt_value, paper_orders
from tools.broker.clock import SHANGHAI
from tools.broker.fees import DEFAULT_RATES
from tools.broker.paper import PaperBroker, PaperConfig
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore

TRADER, ASKER = "UTRADER", "UASKER"
CLOSE = PaperConfig(DEFAULT_RATES, RISK, D("100000.00"), "close", 7, timedelta(days=10))  # the TTL never binds
BARS = [("600000.SH", "20240927", "10.00", "10.20", "9.90", "10.00", "10.00"),
        ("600000.SH", "20240930", "10.05", "10.50", "10.00", "10.37", "10.00")]


@pytest.fixture
def account() -> str:
    return f"ex-{uuid.uuid4().hex[:8]}"


def thread(db_url: str, engine: Engine, sandbox: Sandbox, root: Path, now: datetime) -> GraphThread:
    provider = market(root, BARS)
    ctx = WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                          paper=CLOSE, traders=frozenset({TRADER}), admins=frozenset({ASKER}),
                          broker=lambda name, by: PaperBroker(engine, provider, name, CLOSE, opened_by=by,
                                                              now=lambda: now))
    return GraphThread(db_url, ctx, requester=ASKER)


def at(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=SHANGHAI)


def approve(run: GraphThread, out: dict[str, Any], when: str) -> dict[str, Any]:
    return run.decide(out, {"type": "approve"}, user=TRADER, decided_at=at(when).isoformat())


def test_a_card_before_the_closing_auction_expires_at_1457(db_url: str, engine: Engine, sandbox: Sandbox,
                                                           tmp_path: Path, account: str) -> None:
    run = thread(db_url, engine, sandbox, tmp_path, at("2024-09-30 14:50"))
    out = run.say(f"order 600000.SH buy 100 account={account}")
    assert interrupt_value(out)["args"]["fills"] == "fills at the close of 20240930 (Asia/Shanghai)"
    assert interrupt_value(out)["args"]["expires"] == "2024-09-30 14:57 Asia/Shanghai"
    done = approve(run, out, "2024-09-30 14:58")
    assert done["result"]["status"] == "expired" and paper_orders(engine, account) == []


def test_a_card_after_1457_before_a_holiday_lasts_until_the_next_sessions_auction(
        db_url: str, engine: Engine, sandbox: Sandbox, tmp_path: Path, account: str) -> None:
    run = thread(db_url, engine, sandbox, tmp_path, at("2024-09-30 15:10"))
    out = run.say(f"order 600000.SH buy 100 account={account}")
    card = interrupt_value(out)
    assert card["args"]["fills"] == "fills at the close of 20241008 (Asia/Shanghai)"  # 1-7 October: closed
    assert card["args"]["expires"] == "2024-10-08 14:57 Asia/Shanghai"
    assert approve(run, out, "2024-10-08 14:56")["result"]["status"] == "open"
    late = run.say(f"order 600000.SH buy 100 account={account}")
    assert approve(run, late, "2024-10-08 14:57")["result"]["status"] == "open"  # the last minute still counts
    later = run.say(f"order 600000.SH buy 100 account={account}")
    assert approve(run, later, "2024-10-08 14:58")["result"]["status"] == "expired"
