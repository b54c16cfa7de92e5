"""Propose: the broker previews the order (every rule check, cost, fees, cash and position after) for the card."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.context import default_account, thread_id
from graphs.order.deps import OrderDeps
from graphs.order.payload import preview_json, request_of
from graphs.order.roles import naming_refusal
from graphs.order.state import OrderApprovalState
from graphs.progress import report_progress
from tools.broker.mandate import MANDATE_CHECK
from tools.broker.proposal_claims import fit_claims_to_card
from tools.broker.store import log_event
from tools.data.schema import DataError
from tools.i18n import N_, _

OUTSIDE_MANDATE = N_("The order is outside account {account}'s mandate and is not proposed: {line}.")


def propose_node(state: OrderApprovalState, runtime: Runtime[OrderDeps], config: RunnableConfig,
                 ) -> dict[str, Any]:
    ctx = runtime.context
    intent = state["order_intent"]
    account = state.get("account") or intent.get("account") or default_account(config)
    client_order_id = state.get("client_order_id") or f"{thread_id(config)}:{uuid.uuid4().hex[:16]}"
    report_progress(_("checking the order"), f"{_(intent['side'])} {intent['quantity']} {intent['ts_code']}")
    if ctx.broker is None:
        return {"order_outcome": _outcome("refused", _("No broker is configured for this run."), account)}
    refused = naming_refusal(ctx, intent.get("proposed_by"), account, default_account(config))
    if refused:
        log_event(ctx.engine, None, account, "refused", intent.get("proposed_by"),
                  {"request": {k: intent.get(k) for k in ("ts_code", "side", "quantity")}, "reason": "no role"})
        return {"order_outcome": _outcome("refused", _("The order cannot be proposed: {reason}.").format(
            reason=refused), account)}
    try:
        broker = ctx.broker(account, intent.get("proposed_by"))
        preview = broker.preview(request_of(intent, client_order_id, thread_id(config)))
    except (DataError, ValueError) as exc:
        return {"order_outcome": _outcome("refused", _("The order cannot be proposed: {error}").format(
            error=exc), account)}
    proposal = preview_json(preview)
    outside = next((c for c in proposal["checks"] if c["name"] == MANDATE_CHECK and not c["passed"]), None)
    if outside is not None:  # never proposed: no card, whoever asked
        log_event(ctx.engine, client_order_id, account, "refused", intent.get("proposed_by"),
                  {"request": proposal["request"], "reason": "mandate", "mandate": outside["detail"]})
        return {"order_outcome": _outcome("refused", _(OUTSIDE_MANDATE).format(account=account,
                                                                             line=outside["detail"]), account)}
    if intent.get("claim"):  # an automated proposer's card slot lapses with the card, not hours later
        fit_claims_to_card(ctx.engine, intent["claim"], datetime.fromisoformat(proposal["expires_at"]))
    run = config["configurable"].get("run_id")  # the run's record (its manifest): what led to this order
    log_event(ctx.engine, client_order_id, account, "proposed", intent.get("proposed_by"),
              {"request": proposal["request"], "passed": proposal["passed"],
               "failed": [c["name"] for c in proposal["checks"] if not c["passed"]], **({"run": run} if run else {})})
    return {"account": account, "client_order_id": client_order_id, "proposal": proposal, "order_outcome": {},
            "proposed_at": datetime.now(UTC).isoformat()}


def _outcome(status: str, message: str, account: str) -> dict[str, Any]:
    return {"status": status, "message": message, "account": account, "order": None, "proposal": None,
            "decided_by": None}
