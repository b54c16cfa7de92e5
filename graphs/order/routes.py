"""Routing of the order approval subgraph: every refused decision asks again; every other outcome (and a proposal
that could not be made) ends in release, which gives the proposer's card claim back."""

from __future__ import annotations

from langgraph.graph import END

from graphs.order.state import OrderApprovalState, OrderState


def route_after_propose(state: OrderApprovalState) -> str:
    return "release" if (state.get("order_outcome") or {}).get("status") else "approve"


def route_after_authorize(state: OrderApprovalState) -> str:
    return {"submit": "submit", "ask_again": "approve"}.get(state.get("verdict") or "", "release")


def route_after_parse(state: OrderState) -> str:
    return "order_approval" if state.get("order_intent") and not state.get("final_reply") else END
