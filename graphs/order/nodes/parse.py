"""Parse: the manual order request (`order CODE buy|sell QTY ...`) into the intent the approval subgraph takes."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from graphs.clarify import CANCELLED, is_cancel
from graphs.common import new_human_text
from graphs.order.grammar import USAGE, OrderGrammarError, parse_order
from graphs.order.reconcile import reconcile_reply
from graphs.order.state import OrderState
from tools.i18n import _


def parse_node(state: OrderState, config: RunnableConfig) -> dict[str, Any]:
    messages = state.get("messages", [])
    text = new_human_text(messages, state.get("consumed", 0))
    fresh: dict[str, Any] = {"consumed": len(messages), "result": None, "order_outcome": {}, "order_intent": {}}
    reconcile = (state.get("background_request") or {}).get("reconcile")
    if reconcile:  # the reconciliation's post of a difference (graphs/order/reconcile.py): answered with it
        return {**fresh, "final_reply": reconcile_reply(reconcile)}
    if is_cancel(text):
        return {**fresh, "final_reply": CANCELLED}
    try:
        intent = parse_order(text)
    except OrderGrammarError as exc:
        return {**fresh, "final_reply": _("{error}.\nUsage: `{usage}`").format(error=exc, usage=USAGE)}
    who = state.get("requester")
    reason = intent.reason or (_("manual order by {who}").format(who=who) if who else
                               _("manual order by the console operator"))
    return {**fresh, "final_reply": None,
            "order_intent": {**intent.as_dict(), "reason": reason, "proposed_by": who}}
