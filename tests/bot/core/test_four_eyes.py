"""Four-eyes approval (issue 29, item 1): an order above QUANTDESK_SECOND_APPROVAL_ABOVE needs two different
traders, each decision a separate interrupt of the order graph; the same trader twice counts once, the proposer is
never the second, a reject by either ends it, an edit starts the approvals again. Sample data: 600519.SH closes at
1,696.35 on 20200824 (100 shares: 169,635.00 CNY, above the 100,000 threshold), 000001.SZ at 14.46 (1,446.00)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from bot.stores.records import DecisionRecord
from graphs.context import WorkflowContext
from testkit.graph_thread import GraphThread
from testkit.paper import CONFIG, interrupt_value, order_events, paper_orders
from testkit.paths import REPO
from testkit.roles import ROOT as ROOT_ADMIN
from testkit.roles import chat, desk
from tools.access.login import os_login
from tools.access.roles import RoleSet
from tools.broker.paper import PaperBroker
from tools.broker.records import PaperOrder
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore

ANNA, BO, CY, REQ = "UANNA", "UBO", "UCY", "UREQ"
FIRST_OF_TWO = "none yet (0 of 2: two traders above 100,000.00 CNY)"


@pytest.fixture(scope="module")
def provider() -> SampleProvider:
    return SampleProvider()


@pytest.fixture
def account() -> str:
    return f"fe-{uuid.uuid4().hex[:8]}"


def thread(db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, requester: str = REQ,
           ) -> GraphThread:
    ctx = WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                          paper=CONFIG, traders=frozenset({ANNA, BO, CY}), admins=frozenset({REQ}),
                          second_approval_above=Decimal("100000"),
                          broker=lambda name, by: PaperBroker(engine, provider, name, CONFIG, opened_by=by))
    return GraphThread(db_url, ctx, requester=requester)


def test_below_the_threshold_one_trader_suffices(db_url: str, engine: Engine, sandbox: Sandbox,
                                                 provider: SampleProvider, account: str) -> None:
    run = thread(db_url, engine, sandbox, provider)
    out = run.say(f"order 000001.SZ buy 100 account={account}")
    assert "approvals" not in interrupt_value(out)["args"]
    done = run.decide(out, {"type": "approve"}, user=ANNA)
    assert done["result"]["status"] == "filled"
    assert [o.approved_by for o in paper_orders(engine, account)] == [ANNA]


def test_two_different_traders_place_it_once_with_both_names(db_url: str, engine: Engine, sandbox: Sandbox,
                                                             provider: SampleProvider, account: str) -> None:
    run = thread(db_url, engine, sandbox, provider, requester=ANNA)  # Anna proposes (the maker)
    first = run.say(f"order 600519.SH buy 100 account={account}")
    assert interrupt_value(first)["args"]["approvals"] == FIRST_OF_TWO
    second = run.decide(first, {"type": "approve"}, user=BO)
    (pending,) = second["__interrupt__"]
    assert pending.id != first["__interrupt__"][0].id  # a second interrupt: its own decision row
    assert interrupt_value(second)["args"]["approvals"] == (
        "UBO (1 of 2: two traders above 100,000.00 CNY); waits for a second, different trader")
    assert paper_orders(engine, account) == []
    again = run.decide(second, {"type": "approve"}, user=BO)  # the same trader twice counts once
    assert "Refused: UBO already approved this order; a second, different trader must approve it" in \
        interrupt_value(again)["description"]
    maker = run.decide(again, {"type": "approve"}, user=ANNA)  # the proposer is never the second
    assert ("Refused: UANNA proposed this order and cannot be its second approver (maker-checker): another trader "
            "must approve it") in interrupt_value(maker)["description"]
    assert paper_orders(engine, account) == []
    done = run.decide(maker, {"type": "approve"}, user=CY)
    assert done["result"]["status"] == "filled"
    assert [o.approved_by for o in paper_orders(engine, account)] == ["UBO,UCY"]
    assert order_events(engine, account)[1:] == [("proposed", ANNA), ("approved", BO), ("refused", BO),
                                            ("refused", ANNA), ("approved", CY), ("submitted", "UBO,UCY"),
                                            ("filled", None)]


def test_a_reject_by_the_second_trader_ends_it(db_url: str, engine: Engine, sandbox: Sandbox,
                                               provider: SampleProvider, account: str) -> None:
    run = thread(db_url, engine, sandbox, provider)
    first = run.say(f"order 600519.SH buy 100 account={account}")
    second = run.decide(first, {"type": "approve"}, user=BO)
    done = run.decide(second, {"type": "reject", "message": "too large today"}, user=CY)
    assert done["result"]["status"] == "rejected" and paper_orders(engine, account) == []


def test_an_edit_after_the_first_approval_starts_the_approvals_again(db_url: str, engine: Engine, sandbox: Sandbox,
                                                                     provider: SampleProvider, account: str) -> None:
    run = thread(db_url, engine, sandbox, provider)
    first = run.say(f"order 600519.SH buy 100 limit=1650 account={account}")
    second = run.decide(first, {"type": "approve"}, user=BO)
    edited = run.decide(second, {"type": "edit", "edited_action": {"name": "place_order", "args": {
        "quantity": 100, "limit_price": "1640.00"}}}, user=CY)  # 164,000 CNY: still above the four-eyes line
    assert interrupt_value(edited)["args"]["approvals"] == FIRST_OF_TWO  # Bo approved other numbers
    small = run.decide(edited, {"type": "edit", "edited_action": {"name": "place_order", "args": {"quantity": 50}}},
                       user=CY)  # 600519.SH buys in lots of 100: not applied, the card stays
    assert "Refused: the edit was not applied: " in interrupt_value(small)["description"]
    assert interrupt_value(small)["args"]["approvals"] == FIRST_OF_TWO  # nothing changed, so nothing to approve again


def test_two_traders_approving_at_once_from_two_processes_give_one_order_with_both_names(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, account: str,
        tmp_path: Path) -> None:
    run = thread(db_url, engine, sandbox, provider)
    run.say(f"order 600519.SH buy 100 account={account}")
    start = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    children = [subprocess.Popen([sys.executable, "-m", "testkit.children.four_eyes", db_url, run.thread, trader,
                                  f"{ANNA},{BO}", str(start)], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
                for trader in (ANNA, BO)]
    start.touch()
    for child in children:
        _, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
    (order,) = paper_orders(engine, account)
    assert order.status == "filled" and sorted(order.approved_by.split(",")) == [ANNA, BO]
    with Session(engine) as session:
        rows = session.scalars(select(DecisionRecord).where(DecisionRecord.thread_id == run.thread)).all()
    assert sorted(r.decided_by for r in rows) == [ANNA, BO]  # both decisions are rows, one per interrupt
    approvals = [who for event, who in order_events(engine, account) if event == "approved"]
    assert sorted(approvals) == [ANNA, BO]


def test_in_the_console_the_policy_keeps_the_first_approver_and_the_proposer_from_the_second_approval(
        tmp_path: Path, own_url: str, own_engine: Engine) -> None:
    """Maker-checker from the policy (issue 29, item 1): on the second card of a four-eyes order, neither the trader
    who approved first nor the proposer may approve; each is refused before any decision is recorded, in their own
    language, and a third trader's approval places the order with both names. Real `quantdesk chat` processes."""
    env = {"QUANTDESK_SECOND_APPROVAL_ABOVE": "100000", "QUANTDESK_DATA_PROVIDER": "sample"}
    desk(own_url, RoleSet(traders=frozenset({"U_ANNA", "U_BO", "U_CY"}), admins=frozenset({ROOT_ADMIN})))
    bo = chat(tmp_path, own_url, "U_BO", "order 600519.SH buy 100", **env)  # Bo proposes (the maker)
    assert f"  approvals: {FIRST_OF_TWO}" in bo
    anna = chat(tmp_path, own_url, "U_ANNA", "pending 1", "approve", "approve", "lang zh", "approve", **env)
    assert (f"  approvals: {os_login()} (1 of 2: two traders above 100,000.00 CNY); waits for a second, different "
            "trader") in anna  # the console names the approver by the login mapped to them
    assert anna.count("error: U_ANNA already approved this order; a second, different trader must approve it") == 1
    assert "错误：U_ANNA 已批准此委托；需要另一名交易员再次批准" in anna
    bo = chat(tmp_path, own_url, "U_BO", "pending 1", "approve", **env)
    assert ("error: U_BO proposed this order and cannot be its second approver (maker-checker): another trader must "
            "approve it") in bo
    with Session(own_engine) as session:  # refused by the policy: no row for either click
        assert [(d.decided_by, d.decision["type"]) for d in session.scalars(
            select(DecisionRecord).order_by(DecisionRecord.decided_at)).all()] == [("U_ANNA", "approve")]
    cy = chat(tmp_path, own_url, "U_CY", "pending 1", "approve", **env)
    assert any(line.startswith("Order 1 filled: BUY 100 600519.SH") for line in cy), cy
    with Session(own_engine) as session:
        assert session.scalars(select(PaperOrder.approved_by)).all() == ["U_ANNA,U_CY"]
