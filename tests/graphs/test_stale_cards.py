"""Stale cards (issue 29, item 2): at approval the order is previewed again on the current account and market; a
price basis moved more than QUANTDESK_STALE_MOVE (2 %), or cash spent by another order in between, gives the
re-checked card saying what changed, never a fill on numbers the trader did not see. Live clock on a synthetic
market (tests/tools/test_paper_broker.py): Monday 2024-06-17 17:00, the data ends Friday (600000.SH closed at 10.37), so
an order is for Tuesday's open; then Monday's bar arrives."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from graphs.context import WorkflowContext
from testkit.graph_thread import GraphThread
from testkit.market import JUNE, MONDAY_EVENING, broker, buy, config, market
from testkit.paper import interrupt_value, order_events, paper_orders
from tools.broker.paper import PaperBroker
from tools.data.local import LocalProvider
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore

TRADER, ASKER = "UTRADER", "UASKER"
CLICK = (MONDAY_EVENING + timedelta(minutes=1)).isoformat()  # within the card's 30 minutes


class Market:
    """The market the order graph sees: replaced when a new bar arrives (a new provider reads the files again)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.provider: LocalProvider = market(root, JUNE)

    def bar_arrives(self, close: str) -> None:
        self.provider = market(self.root, [*JUNE, ("600000.SH", "20240617", "10.40", "10.90", "10.30", close,
                                                   "10.37")])


@pytest.fixture
def account() -> str:
    return f"st-{uuid.uuid4().hex[:8]}"


def thread(db_url: str, engine: Engine, sandbox: Sandbox, live: Market) -> GraphThread:
    ctx = WorkflowContext(provider=live.provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                          paper=config(), traders=frozenset({TRADER}), admins=frozenset({ASKER}),
                          broker=lambda name, by: PaperBroker(engine, live.provider, name, config(), opened_by=by,
                                                              now=lambda: MONDAY_EVENING))
    return GraphThread(db_url, ctx, requester=ASKER)


def approve(run: GraphThread, out: dict[str, Any]) -> dict[str, Any]:
    return run.decide(out, {"type": "approve"}, user=TRADER, decided_at=CLICK)


def test_a_price_move_of_three_percent_gives_a_rechecked_card_not_a_fill(db_url: str, engine: Engine,
                                                                          sandbox: Sandbox, tmp_path: Path,
                                                                          account: str) -> None:
    live = Market(tmp_path)
    run = thread(db_url, engine, sandbox, live)
    out = run.say(f"order 600000.SH buy 1000 account={account}")
    assert interrupt_value(out)["args"]["estimated_cost"].endswith("at 10.37")
    live.bar_arrives("10.70")  # +3.18 %
    again = approve(run, out)
    card = interrupt_value(again)
    assert ("Refused: re-checked at UTRADER's approval, nothing was placed: the price basis moved +3.2% (10.37 → "
            "10.70), more than 2%; the card shows the new numbers, decide again") in card["description"]
    assert card["args"]["estimated_cost"].endswith("at 10.70")
    assert paper_orders(engine, account) == []
    assert ("stale", TRADER) in order_events(engine, account)
    done = approve(run, again)  # decided on the numbers shown: placed
    assert done["result"]["status"] == "open" and len(paper_orders(engine, account)) == 1


def test_a_move_within_the_threshold_is_placed(db_url: str, engine: Engine, sandbox: Sandbox, tmp_path: Path,
                                               account: str) -> None:
    live = Market(tmp_path)
    run = thread(db_url, engine, sandbox, live)
    out = run.say(f"order 600000.SH buy 1000 account={account}")
    live.bar_arrives("10.50")  # +1.25 %
    done = approve(run, out)
    assert done["result"]["status"] == "open" and len(paper_orders(engine, account)) == 1


def test_cash_spent_by_another_order_in_between_gives_a_rechecked_card(db_url: str, engine: Engine, sandbox: Sandbox,
                                                                       tmp_path: Path, account: str) -> None:
    live = Market(tmp_path)
    run = thread(db_url, engine, sandbox, live)
    out = run.say(f"order 600000.SH buy 8000 account={account}")  # holds back 8000 × 11.41 of 100,000 cash
    assert interrupt_value(out)["allowed"][0] == "approve"
    broker(engine, live.provider, account, now=MONDAY_EVENING).submit(buy(f"{account}-other", "600036.SH", 1000))
    again = approve(run, out)
    card = interrupt_value(again)
    assert "Refused: re-checked at UTRADER's approval, nothing was placed: cash now FAILS" in card["description"]
    assert "approve" not in card["allowed"]  # the re-checked order fails a check: edit or reject
    assert [o.ts_code for o in paper_orders(engine, account)] == ["600036.SH"]
