"""Approve: the order card as an `approval` interrupt (after an edit, the edited order re-checked); the decision
and who made it, and when, come back."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from graphs.context import decided_at, decider, traders_of
from graphs.interrupts import decision_of
from graphs.order.card import order_card
from graphs.order.deps import OrderDeps
from graphs.order.four_eyes import approvals_text, needs_two
from graphs.order.state import OrderApprovalState


def approve_node(state: OrderApprovalState, runtime: Runtime[OrderDeps], config: RunnableConfig,
                 ) -> dict[str, Any]:
    ctx = runtime.context
    approvals, threshold = list(state.get("approvals") or []), ctx.second_approval_above
    shown = (approvals_text(threshold, approvals) if threshold is not None and needs_two(threshold, state["proposal"])
             else None)
    payload = order_card(state["proposal"], state["account"], bool(traders_of(ctx, state["account"])),
                         state.get("refusals") or [], state.get("edited_by"), shown)
    if shown and approvals:  # maker-checker: the policy offers the second approval to nobody who may not give it
        payload.update(approved_by=approvals, proposed_by=state["order_intent"].get("proposed_by"))
    payload["users"] += [who for who in approvals if who not in payload["users"]]  # the card's approvals line
    decision = decision_of(interrupt(payload))
    when = decided_at(config) or datetime.now(UTC)
    return {"decision": decision, "decided_by": decider(config), "decided_at": when.isoformat()}
