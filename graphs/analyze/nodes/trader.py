"""The trader: turns the risk manager's decision into an order proposal for the paper account. The model proposed
a target position; the sizing code (tools.broker.sizing) constrains it to the account's limit, cash, lots and
sellable shares. An order goes to the order approval subgraph: a trader must approve it. One card at a time: the desk
claims its (account, stock) card slot (tools.broker.proposal_claims, atomic, so two decisions finishing at once
cannot both propose) before the card is shown, and the approval gives it back; while the claim is held or a desk
order on the stock is open, the desk proposes nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.state import AnalyzeState
from graphs.context import thread_id
from graphs.order.deps import accounts
from graphs.progress import report_progress, report_prose
from tools.broker.boards import OrderRuleError
from tools.broker.clock import day
from tools.broker.proposal_claims import claim_proposal, release_proposals
from tools.broker.rules import lot_rule
from tools.broker.sim_clock import paper_clock
from tools.broker.sizing import size_order
from tools.desk.log import rating_word
from tools.i18n import _

DESK_TAG = "desk"


def trader_node(state: AnalyzeState, runtime: Runtime[AnalyzeDeps], config: RunnableConfig) -> dict[str, Any]:
    ctx, request, risk = runtime.context, state["request"], state["risk_summary"] or {}
    code = request["ts_code"]
    simulated = _simulated_session(ctx)
    latest = simulated or ctx.provider.last_date()
    if not request.get("replay") and request["trade_date"] != latest:
        why = (_("the decision is as of {date}, but the paper account's simulated clock is at {session}, where an "
                 "order would fill; the desk orders only on the day it decided. `clock set {date}` moves the clock "
                 "there; `analyze {code} {session}` decides as of the clock's session")
               if simulated else
               _("the decision is as of {date}, not the latest trading day {latest}; the paper account trades only on "
                 "today's data (a replay trades past dates in its own account)")).format(
            date=request["trade_date"], latest=latest, session=simulated, code=code)
        return {"trader_investment_plan": _("no order: {why}").format(why=why), "order_intent": {}}
    position = (state.get("portfolio_positions") or {}).get(code) or {}
    try:
        lot = lot_rule(code, day(request["trade_date"]))
    except OrderRuleError as exc:
        return {"trader_investment_plan": _("no order: {why}").format(why=exc), "order_intent": {}}
    max_weight = ctx.paper.risk.max_position_weight if ctx.paper else Decimal(1)
    sizing = size_order(risk["rating"], Decimal(str(risk["target_position"])), max_weight,
                        Decimal(state["account_total_value"]), Decimal(state["current_price"]),
                        int(position.get("quantity") or 0), int(position.get("sellable") or 0),
                        Decimal(state["account_cash"]), lot)
    report_progress(_("trader"), sizing.outcome)
    if not request.get("replay"):
        report_prose("trader", _("The trader's reasoning"), sizing.explanation)
    if sizing.side is None:
        return {"trader_investment_plan": sizing.explanation, "order_intent": {}}
    reason = _("decision desk: {rating} {code} as of {date}, target {target} (confidence {confidence})").format(
        rating=rating_word(risk["rating"]), code=code, date=request["trade_date"],
        target=f"{float(risk['target_position']):.0%}", confidence=f"{float(risk['confidence']):.2f}")
    intent = {"ts_code": code, "side": sizing.side, "quantity": sizing.quantity, "price_type": "market",
              "limit_price": None, "account": request["account"], "proposed_by": state.get("requester"),
              "tag": DESK_TAG, "reason": reason}
    if not request.get("replay"):  # a replay fills in its own account, with no card
        waiting = _claim(ctx, request["account"], code, thread_id(config))
        if waiting:
            return {"trader_investment_plan": _("no order: {why}").format(why=waiting), "order_intent": {}}
        intent["claim"] = thread_id(config)  # the approval gives it back
    return {"trader_investment_plan": sizing.explanation, "order_intent": intent}


def _simulated_session(ctx: AnalyzeDeps) -> str | None:
    """The paper account's simulated session on static data (its orders fill there); None on live data."""
    if ctx.paper is None:
        return None
    clock = paper_clock(ctx.engine, ctx.provider, ctx.paper.live_data_days, ctx.now())
    return clock.today if clock.simulated else None


def _claim(ctx: AnalyzeDeps, account: str, code: str, holder: str) -> str | None:
    """Claim the desk's card slot on `code` in `account` for this thread; None when it holds it, else why the
    desk must not propose: another card of the desk's waits for a trader, or a desk order on `code` is open. A
    second card sized on the same position would double it if both were approved. The claim comes before the
    open orders are read: the last card's claim is given back only once its order is placed."""
    if ctx.paper is None:
        return _("this process has no paper account configured")
    claim = claim_proposal(ctx.engine, account, code, DESK_TAG, holder, ctx.paper.order_ttl, datetime.now(UTC))
    if claim.holder != holder:
        return _("an order card of the desk on {code} in {account} is still waiting for a trader (thread {thread}); "
                 "approve or reject it first").format(code=code, account=account, thread=claim.holder)
    _held, open_orders = accounts(ctx).tagged_position(account, code, DESK_TAG)
    if open_orders:
        release_proposals(ctx.engine, holder)
        return _("an order of the desk on {code} is still open in {account}; it fills or expires first").format(
            code=code, account=account)
    return None
