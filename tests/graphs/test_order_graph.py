"""The order approval subgraph through the main graph, as Studio or the SDK would drive it: only traders approve
or edit (a resume naming no trader is refused and recorded, and the order waits for a trader), expiry, edits
re-checked against the rules, rejection, and a re-run of the submit step that places nothing twice. Sample data:
the account runs on a simulated clock and fills at the last close (20200824)."""

from __future__ import annotations

import pytest
from langgraph.graph import END, START, StateGraph
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from graphs.context import WorkflowContext
from graphs.order.nodes.submit import submit_node
from graphs.order.state import OrderApprovalState
from testkit.graph_thread import GraphThread
from testkit.paper import interrupt_value, order_events, paper_context, paper_fills, paper_orders
from tools.broker.records import OrderEvent
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox

TRADER, OTHER = "UTRADER", "UALICE"
@pytest.fixture(scope="module")
def provider() -> SampleProvider:
    return SampleProvider()


def _ctx(engine: Engine, sandbox: Sandbox, provider: SampleProvider, traders: frozenset[str]) -> WorkflowContext:
    return paper_context(engine, sandbox, provider, traders=traders, admins={OTHER})  # the requester names accounts


def _thread(db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider,
            traders: frozenset[str] = frozenset({TRADER})) -> GraphThread:
    return GraphThread(db_url, _ctx(engine, sandbox, provider, traders), requester=OTHER)


def test_a_trader_approves_and_the_order_fills_at_the_last_close(db_url: str, engine: Engine, sandbox: Sandbox,
                                                                  provider: SampleProvider) -> None:
    thread = _thread(db_url, engine, sandbox, provider)
    out = thread.say("order 600519.SH buy 100 account=g1 results beat expectations")
    card = interrupt_value(out)
    assert card["type"] == "approval" and card["deciders"] == "traders"
    assert card["allowed"] == ["approve", "edit", "reject"]
    assert card["args"]["order"] == "BUY 100 600519.SH 贵州茅台 at market"
    # the new clock's session 20200727 (20 sessions before the sample's last day): close 1622.55;
    # 100 × 1622.55 = 162,255.00; commission 0.025 % = 40.56375 → 40.56; transfer fee 0.002 % (2020) = 3.2451 → 3.25
    assert card["args"]["estimated_cost"] == "162,255.00 + fees 43.81 at 1622.55"
    assert card["args"]["cash_after"] == "837,701.19"
    assert card["args"]["why"] == "results beat expectations"
    assert "PASS cash: holds back" in card["description"]
    done = thread.decide(out, {"type": "approve"}, user=TRADER)
    result = done["result"]
    assert result["status"] == "filled" and result["decided_by"] == TRADER
    (fill,) = paper_fills(engine, "g1")
    assert (fill.price_fen, fill.value_fen, fill.commission_fen, fill.transfer_fee_fen, fill.stamp_duty_fen) == (
        162255, 16225500, 4056, 325, 0)
    assert fill.basis == "simulated fill at the last available close"
    assert order_events(engine, "g1") == [("account opened", OTHER), ("proposed", OTHER), ("approved", TRADER),
                                     ("submitted", TRADER), ("filled", None)]


@pytest.mark.parametrize("who", [OTHER, None])
def test_a_decision_by_no_trader_is_refused_recorded_and_asked_again(db_url: str, engine: Engine, sandbox: Sandbox,
                                                                      provider: SampleProvider,
                                                                      who: str | None) -> None:
    account = f"g2{who or 'anon'}".lower()
    thread = _thread(db_url, engine, sandbox, provider)
    out = thread.say(f"order 000001.SZ buy 100 account={account}")
    again = thread.decide(out, {"type": "approve"}, user=who)
    card = interrupt_value(again)  # a new approval: the order still waits for a trader
    assert "and cannot approve its orders (`roles` lists who is)" in card["description"]
    assert paper_orders(engine, account) == []
    assert ("refused", who) in order_events(engine, account)
    edit = thread.decide(again, {"type": "edit", "edited_action": {"name": "place_order", "args": {"quantity": 200}}},
                         user=who)
    assert "cannot edit its orders" in interrupt_value(edit)["description"] and paper_orders(engine, account) == []
    done = thread.decide(edit, {"type": "approve"}, user=TRADER)
    assert done["result"]["status"] == "filled"
    assert len(paper_fills(engine, account)) == 1


def test_with_no_traders_configured_an_order_can_only_be_rejected(db_url: str, engine: Engine, sandbox: Sandbox,
                                                                   provider: SampleProvider) -> None:
    thread = _thread(db_url, engine, sandbox, provider, traders=frozenset())
    out = thread.say("order 000001.SZ buy 100 account=g3")
    card = interrupt_value(out)
    assert card["allowed"] == ["reject"]
    assert "`roles grant trader USER`" in card["who_decides"]
    again = thread.decide(out, {"type": "approve"}, user=TRADER)  # Studio or the SDK can still send one
    assert "not a trader" in interrupt_value(again)["description"] and paper_orders(engine, "g3") == []


def test_an_expired_proposal_cannot_be_approved(db_url: str, engine: Engine, sandbox: Sandbox,
                                                provider: SampleProvider) -> None:
    thread = _thread(db_url, engine, sandbox, provider)
    out = thread.say("order 000001.SZ buy 100 account=g4")
    late = "2999-01-01T00:00:00+00:00"
    done = thread.decide(out, {"type": "approve"}, user=TRADER, decided_at=late)
    assert done["result"]["status"] == "expired"
    assert "expired at" in done["result"]["message"] and paper_orders(engine, "g4") == []
    assert ("expired", TRADER) in order_events(engine, "g4")


def test_an_edit_is_checked_against_the_rules_before_anything_is_placed(db_url: str, engine: Engine,
                                                                         sandbox: Sandbox,
                                                                         provider: SampleProvider) -> None:
    thread = _thread(db_url, engine, sandbox, provider)
    out = thread.say("order 000001.SZ buy 100 limit=14.50 account=g5")
    card = interrupt_value(out)
    # 20200727's previous close 13.50 (the bar's pre_close): ±10 % → 12.15 … 14.85
    assert card["args_schema"]["quantity"] == {"type": "integer", "title": "Quantity (shares)", "minimum": 100,
                                               "maximum": 1_000_000, "multiple_of": 100}
    lot = thread.decide(out, {"type": "edit", "edited_action": {"name": "place_order", "args": {"quantity": 150}}},
                        user=TRADER)
    assert "quantity (shares) must be a multiple of 100" in interrupt_value(lot)["description"].lower()
    price = thread.decide(lot, {"type": "edit", "edited_action": {"name": "place_order",
                                                                  "args": {"quantity": 200, "limit_price": 99}}},
                          user=TRADER)
    assert "Limit price (CNY) must be at most" in interrupt_value(price)["description"]
    assert paper_orders(engine, "g5") == []
    edited = thread.decide(price, {"type": "edit", "edited_action": {"name": "place_order", "args": {
        "quantity": 300, "limit_price": "14.60"}}}, user=TRADER)
    card = interrupt_value(edited)  # a valid edit is not placed as it comes: a new card, every check run again on it
    assert (card["args"]["quantity"], card["args"]["limit_price"]) == (300, "14.60")
    assert card["description"].startswith(f"Edited by {TRADER}: every check ran again")
    assert "All checks pass." in card["description"] and card["allowed"] == ["approve", "edit", "reject"]
    assert paper_orders(engine, "g5") == []
    done = thread.decide(edited, {"type": "approve"}, user=TRADER)
    assert done["result"]["status"] == "filled"
    (order,) = paper_orders(engine, "g5")
    assert (order.quantity, order.limit_price_fen) == (300, 1460)
    assert [e for e, _ in order_events(engine, "g5")].count("edited") == 1


def test_an_edit_whose_order_fails_its_checks_is_not_applied_and_the_card_waits_as_it_was(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider) -> None:
    """Issue 39, item 10: 1,000 shares of 600519.SH (about 1.6 million CNY) fail the cash and the order value checks;
    the card keeps its 100 shares, approvable, and says the edit was not applied."""
    thread = _thread(db_url, engine, sandbox, provider)
    out = thread.say("order 600519.SH buy 100 account=g9")
    big = thread.decide(out, {"type": "edit", "edited_action": {"name": "place_order", "args": {"quantity": 1000}}},
                        user=TRADER)
    card = interrupt_value(big)
    assert card["args"]["quantity"] == 100 and card["allowed"] == ["approve", "edit", "reject"]
    (line,) = [line for line in card["description"].splitlines() if line.startswith("Refused: ")]
    assert line.startswith("Refused: the edit was not applied: the edited order (BUY 1,000 600519.SH 贵州茅台 at "
                           "market) fails its checks (cash: holds back ")
    assert "; order value limit: " in line and line.endswith("). The card still waits, with the order as it was.")
    done = thread.decide(big, {"type": "approve"}, user=TRADER)
    assert done["result"]["status"] == "filled"
    (order,) = paper_orders(engine, "g9")
    assert order.quantity == 100
    assert [e for e, _ in order_events(engine, "g9")].count("edited") == 0


def test_a_rejection_places_nothing_and_keeps_its_reason(db_url: str, engine: Engine, sandbox: Sandbox,
                                                         provider: SampleProvider) -> None:
    thread = _thread(db_url, engine, sandbox, provider)
    out = thread.say("order 000001.SZ buy 100 account=g6")
    done = thread.decide(out, {"type": "reject", "message": "too close to the close"}, user=OTHER)
    assert done["result"]["status"] == "rejected" and paper_orders(engine, "g6") == []
    with Session(engine) as session:
        event = session.scalars(select(OrderEvent).where(OrderEvent.account == "g6",
                                                         OrderEvent.event == "rejected")).one()
    assert (event.actor, event.detail) == (OTHER, {"reason": "too close to the close"})


def test_failing_checks_offer_no_approve_and_an_edit_can_fix_them(db_url: str, engine: Engine, sandbox: Sandbox,
                                                                   provider: SampleProvider) -> None:
    thread = _thread(db_url, engine, sandbox, provider)
    out = thread.say("order 600519.SH buy 1000 account=g7")  # 1,696,350.00: above the cash and the value limit
    card = interrupt_value(out)
    assert card["allowed"] == ["edit", "reject"]
    assert "FAIL cash" in card["description"] and "FAIL order value limit" in card["description"]
    again = thread.decide(out, {"type": "approve"}, user=TRADER)
    assert "approve is not possible while checks fail" in interrupt_value(again)["description"]
    edited = thread.decide(again, {"type": "edit", "edited_action": {"name": "place_order",
                                                                     "args": {"quantity": 100}}}, user=TRADER)
    # the edit fixed them: now it may be approved
    assert interrupt_value(edited)["allowed"] == ["approve", "edit", "reject"]
    done = thread.decide(edited, {"type": "approve"}, user=TRADER)
    assert done["result"]["status"] == "filled"


def test_running_the_submit_step_again_places_nothing_twice(engine: Engine, sandbox: Sandbox,
                                                            provider: SampleProvider) -> None:
    """Nodes re-run on resume (a crash after the order was placed, before the checkpoint): the second run finds
    the order its client order id placed."""
    ctx = _ctx(engine, sandbox, provider, frozenset({TRADER}))
    state = {"account": "g8", "client_order_id": "t-g8:once", "decided_by": TRADER, "proposal": {},
             "order_intent": {"ts_code": "000001.SZ", "side": "buy", "quantity": 100, "price_type": "market",
                              "limit_price": None, "reason": "test", "proposed_by": OTHER}}
    graph = StateGraph(OrderApprovalState, context_schema=WorkflowContext)
    graph.add_node("submit", submit_node)
    graph.add_edge(START, "submit")
    graph.add_edge("submit", END)
    step = graph.compile()
    config = {"configurable": {"thread_id": "t-g8"}}
    first = step.invoke(state, config, context=ctx)  # type: ignore[arg-type]
    second = step.invoke(state, config, context=ctx)  # type: ignore[arg-type]
    assert first["order_outcome"]["order"]["id"] == second["order_outcome"]["order"]["id"]
    assert second["order_outcome"]["status"] == "filled"
    assert len(paper_orders(engine, "g8")) == 1 and len(paper_fills(engine, "g8")) == 1


@pytest.mark.parametrize("text, problem", [
    ("order 600519.SH hold 100", "the side must be buy or sell"),
    ("order 600519.SH buy 0", "the quantity must be a whole number of shares"),
    ("order 600519 buy 100", "600519 is not a ts_code"),
    ("order 600519.SH buy 100 limit=abc", "limit=abc is not a price"),
    ("order 600519.SH buy 100 limit=9.999", "two decimals at most"),
    ("order 600519.SH buy 100 size=3", "unknown parameter size"),
    ("order 600519.SH buy 100 account=a/b", "account name"),
    ("order 600519.SH", "an order needs a code, a side and a quantity"),
])
def test_a_malformed_order_says_what_to_write(db_url: str, engine: Engine, sandbox: Sandbox,
                                              provider: SampleProvider, text: str, problem: str) -> None:
    out = _thread(db_url, engine, sandbox, provider).say(text)
    assert "__interrupt__" not in out
    assert problem in out["final_reply"] and "Usage: `order CODE buy|sell QTY" in out["final_reply"]
