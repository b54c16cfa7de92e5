"""State of the order approval subgraph and of the manual order workflow. JSON only: money as text."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages


class OrderApprovalInput(TypedDict):
    """What a workflow hands the approval subgraph: OrderIntent.as_dict() plus `proposed_by`."""

    order_intent: dict[str, Any]


class OrderApprovalOutput(TypedDict):
    """What comes back: {status, message, account, order, proposal, decided_by}."""

    order_outcome: dict[str, Any]


class OrderApprovalState(OrderApprovalInput, OrderApprovalOutput, total=False):
    account: str
    client_order_id: str
    proposal: dict[str, Any]  # the broker's preview (tools.broker.orders.Preview) as JSON
    proposed_at: str  # ISO: a trading switch-off after it expires the card
    refusals: list[str]  # decisions refused by the trader policy, shown on the next card
    edited_by: str | None  # who edited the order last: the card it produced says so
    approvals: list[str]  # traders who approved this card so far (four-eyes: the first of two)
    decision: dict[str, Any]
    decided_by: str | None
    decided_at: str  # ISO
    verdict: str  # after authorize: submit, ask_again (a refused or failing decision) or done


class OrderState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    consumed: int
    requester: str | None
    background_request: dict[str, Any] | None  # the reconciliation's post of a difference (graphs/order/reconcile.py)
    order_intent: dict[str, Any]
    order_outcome: dict[str, Any]
    result: dict[str, Any] | None
    final_reply: str | None
