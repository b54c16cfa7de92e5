"""Cards and decisions are read once from the graph's HITL dicts and written back to the same dicts (checkpoints and
the decisions table keep their shape); anything else is refused with a clear error, and a run paused on it cannot
be decided."""

from __future__ import annotations

import re
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from bot.cards import (
    Answer,
    ApprovalCard,
    Approve,
    ClarifyCard,
    CodeReviewCard,
    Edit,
    Malformed,
    Reject,
    card_of,
    code_edit,
    decision_of,
)
from bot.runner import outcome_of, pending_of
from graphs.interrupts import TRADERS, approval_request, clarify_request, code_review_request
from graphs.views import refs

SCHEMA = {"quantity": {"type": "integer", "title": "Quantity", "minimum": 100, "multiple_of": 100}}


def _order_card() -> dict[str, Any]:
    """An order card as graphs/order/card.py and the approve node shape it: the approval plus its extras."""
    payload = approval_request("place_order", "BUY 600519.SH 100", {"quantity": 100, "account": "C1", "fills": "open"},
                               "All checks pass.", "The order is not placed.", ("approve", "edit", "reject"), SCHEMA)
    payload.update(deciders=TRADERS, who_decides="Traders decide.", expires_at="2024-10-08T15:00:00+08:00",
                   failed=[], approved_by=["UTRADER1"], proposed_by="UALICE")
    payload.update(refs(["UALICE", "UTRADER1"], ["C1"]))
    return payload


@pytest.mark.parametrize("payload", [
    clarify_request("Which dates?", ["2019", "2020"]),
    clarify_request("Which stock?"),
    code_review_request("rev10", "return -close.pct_change(10)", "def compute_factor(close): ...", "IC 0.03",
                        None, ["approve", "edit", "reject"], "bwrap"),
    code_review_request("rev10", "return close", "program", "dry run failed", "NaN everywhere", ["reject"], "none"),
    approval_request("save_factor", "Save rev10", {"name": "rev10"}, "Save it?", "Nothing is saved."),
    _order_card(),
], ids=["clarify", "clarify-bare", "review", "review-failed", "approval", "order-card"])
def test_a_payload_the_graph_makes_reads_as_its_card_and_writes_back_unchanged(payload: dict[str, Any]) -> None:
    card = card_of(payload)
    assert card.payload() == payload
    assert card_of(card.payload()) == card


def test_the_card_carries_its_fields_typed() -> None:
    card = card_of(_order_card())
    assert isinstance(card, ApprovalCard)
    assert (card.action, card.account, card.deciders, card.approved_by) == ("place_order", "C1", TRADERS,
                                                                            ("UTRADER1",))
    assert card.expires is not None and card.expires.isoformat() == "2024-10-08T15:00:00+08:00"
    assert card.users == ("UALICE", "UTRADER1") and card.args_schema == SCHEMA
    review = card_of(code_review_request("f", "return close", "p", "s", None, ["approve"], "bwrap"))
    assert isinstance(review, CodeReviewCard) and review.isolation == "bwrap" and review.allowed == ("approve",)
    clarify = card_of(clarify_request("Which?", ["a"]))
    assert isinstance(clarify, ClarifyCard) and clarify.choices == ("a",) and clarify.allowed == ("respond",)


@pytest.mark.parametrize("decision, hitl", [
    (Approve(), {"type": "approve"}),
    (Edit("place_order", {"quantity": 200}), {"type": "edit", "edited_action": {"name": "place_order",
                                                                                 "args": {"quantity": 200}}}),
    (code_edit("return close"), {"type": "edit", "edited_action": {"name": "code_review",
                                                                    "args": {"code": "return close"}}}),
    (Reject("too late"), {"type": "reject", "message": "too late"}),
    (Answer("20200101 20200601"), {"type": "respond", "message": "20200101 20200601"}),
])
def test_a_decision_is_the_same_hitl_dict_the_decisions_table_stores(decision: Any, hitl: dict[str, Any]) -> None:
    assert decision.hitl() == hitl
    assert decision_of(hitl) == decision


@pytest.mark.parametrize("value, error", [
    ("Which dates?", "must be an object"),
    ({"type": "poll", "question": "?"}, "unknown interrupt type 'poll'"),
    ({"question": "unmarked"}, "unknown interrupt type None"),
    ({"type": "clarify"}, "'question' must be text"),
    ({"type": "clarify", "question": "?", "choices": "a,b"}, "'choices' must be a list of text"),
    ({"type": "code_review", "name": "f"}, "'code' must be text"),
    ({"type": "approval", "action": "x", "allowed": ["approve", "shrug"]}, "unknown decision(s) allowed: shrug"),
    ({"type": "approval", "action": "x", "args": ["quantity"]}, "'args' must be an object"),
    ({"type": "approval", "action": "x", "args_schema": {"quantity": 1}}, "map each argument to its rule"),
    ({"type": "approval", "action": "x", "expires_at": "tomorrow"}, "'expires_at' is no time"),
])
def test_a_malformed_payload_is_refused_naming_what_is_wrong(value: Any, error: str) -> None:
    with pytest.raises(Malformed, match=re.escape(error)):
        card_of(value)


@pytest.mark.parametrize("value, error", [
    ({"type": "approve!"}, "unknown decision type"),
    ({"type": "edit", "edited_action": {"args": {}}}, "must carry its edited action"),
    ({"type": "reject", "message": 5}, "message must be text"),
    (["approve"], "must be an object"),
])
def test_a_malformed_decision_is_refused(value: Any, error: str) -> None:
    with pytest.raises(Malformed, match=re.escape(error)):
        decision_of(value)


class _State(TypedDict, total=False):
    answer: Any


def test_a_run_paused_on_what_is_no_card_fails_closed() -> None:
    """The runner reads a pause's payload where it leaves the graph: a payload that is no card makes the run's
    outcome a failure that says so, and its pending list raises, so nothing can be decided on it."""
    def ask(state: _State) -> _State:
        return {"answer": interrupt({"type": "poll", "question": "?"})}

    graph = StateGraph(_State).add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END)
    compiled = graph.compile(checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "t1"}}
    compiled.invoke({}, config)
    state = compiled.get_state(config)  # what Runner.current and Runner.pending read
    outcome = outcome_of("t1", state)
    assert outcome.status == "failed" and "cannot read" in outcome.text and "poll" in outcome.text
    with pytest.raises(Malformed, match="unknown interrupt type 'poll'"):
        pending_of(state)
