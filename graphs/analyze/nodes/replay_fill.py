"""Replay fill: in a replay only, the trader's order is approved automatically and fills in the replay's own
account at the decision date's close (tools.broker.replay). A live desk never reaches this node."""

from __future__ import annotations

from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.state import AnalyzeState
from graphs.context import thread_id
from graphs.order.deps import broker_for
from tools.broker.orders import SIDE_WORDS, OrderRejected, OrderRequest
from tools.broker.replay import ReplayFill
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
        # a replay's context carries its replay account (replay.py), whose submit fills at once: a ReplayFill
        fill = cast(ReplayFill, broker.submit(order))
    except OrderRejected as exc:
        return {"order_outcome": {"status": "refused",
                                  "message": _("replay account refused the order: {why}").format(why=exc)}}
    message = _("auto-filled in the replay account: {side} {quantity} at {price} on {date}, fees {fees}").format(
        side=_(SIDE_WORDS[fill.side]), quantity=f"{fill.quantity:,}", price=fill.price, date=fill.trade_date,
        fees=fill.fees)
    return {"order_outcome": {"status": "filled", "message": message, "decided_by": "replay",
                              "order": {"side": fill.side, "quantity": fill.quantity, "price": str(fill.price),
                                        "value": str(fill.value), "fees": str(fill.fees)}}}
