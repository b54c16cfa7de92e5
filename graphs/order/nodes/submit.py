"""Submit: place the approved order with the broker, once (idempotent on the client order id, so a re-run after
a crash finds the order it placed instead of placing another)."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.context import thread_id
from graphs.order.deps import OrderDeps, broker_for
from graphs.order.four_eyes import approvers
from graphs.order.payload import order_json, request_of
from graphs.order.state import OrderApprovalState
from graphs.progress import report_progress
from tools.broker.orders import OrderRejected
from tools.data.schema import DataError
from tools.i18n import _


def submit_node(state: OrderApprovalState, runtime: Runtime[OrderDeps], config: RunnableConfig,
                ) -> dict[str, Any]:
    ctx = runtime.context
    account, who = state["account"], state.get("decided_by")
    report_progress(_("placing the order"), account)
    approved_by = approvers(list(state.get("approvals") or []), who)
    request = request_of(state["order_intent"], state["client_order_id"], thread_id(config), approved_by=approved_by)
    base = {"account": account, "proposal": state["proposal"], "decided_by": approved_by}
    try:
        order = broker_for(ctx, account, None).submit(request)
    except OrderRejected as exc:
        return {"order_outcome": {**base, "status": "refused", "order": None,
                                  "message": _("The broker refused the order: {error}. Nothing was placed.").format(
                                      error=exc)}}
    except DataError as exc:
        return {"order_outcome": {**base, "status": "refused", "order": None,
                                  "message": _("The order could not be placed: {error}. Nothing was placed.").format(
                                      error=exc)}}
    return {"order_outcome": {**base, "status": order.status, "order": order_json(order),
                              "message": order.summary()}}
