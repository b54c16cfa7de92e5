"""Release: the approval is over (decided, expired, refused, or the order placed), so the proposer's claim on its
one order card (tools.broker.proposal_claims; the intent's `claim` names the holder) is given back. A manual order
claims nothing."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graphs.order.deps import OrderDeps
from graphs.order.state import OrderApprovalState
from tools.broker.proposal_claims import release_proposals


def release_node(state: OrderApprovalState, runtime: Runtime[OrderDeps]) -> dict[str, Any]:
    holder = state["order_intent"].get("claim")
    if holder:
        release_proposals(runtime.context.engine, str(holder))
    return {}
