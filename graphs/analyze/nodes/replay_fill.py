"""Replay fill: in a replay only, the trader's order is approved automatically and fills in the replay's own
account at the decision date's close (its broker, tools.broker.replay, through the one broker door). A live desk
never reaches this node."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.state import AnalyzeState
from graphs.context import thread_id
from graphs.order.deps import broker_for
from tools.broker.orders import SIDE_WORDS, OrderRejected, OrderRequest
from tools.i18n import _


def replay_fill_node(state: AnalyzeState, runtime: Runtime[AnalyzeDeps], config: RunnableConfig,
                     ) -> dict[str, Any]:
    request, intent = state["request"], state["order_intent"]
    assert request.get("replay"), "only a replay fills without a trader's approval"
    broker = broker_for(runtime.context, request["account"], state.get("requester"))
    order = OrderRequest(f"{state['run_id']}:{request['trade_date']}", intent["ts_code"], intent["side"],
                         int(intent["quantity"]), reason=intent["reason"], thread_id=thread_id(config),
                         approved_by="replay", tag=intent.get("tag"))
    try:
        placed = broker.submit(order)  # a replay's account (replay.py) fills at once, at the date's close
    except OrderRejected as exc:
        return {"order_outcome": {"status": "refused",
                                  "message": _("replay account refused the order: {why}").format(why=exc)}}
    if placed.status != "filled" or not placed.fills:
        return {"order_outcome": {"status": "refused", "message": placed.summary()}}
    fill = placed.fills[-1]
    message = _("auto-filled in the replay account: {side} {quantity} at {price} on {date}, fees {fees}").format(
        side=_(SIDE_WORDS[fill.side]), quantity=f"{fill.quantity:,}", price=fill.price, date=fill.trade_date,
        fees=fill.fees)
    return {"order_outcome": {"status": "filled", "message": message, "decided_by": "replay",
                              "order": {"side": fill.side, "quantity": fill.quantity, "price": str(fill.price),
                                        "value": str(fill.value), "fees": str(fill.fees)}}}
