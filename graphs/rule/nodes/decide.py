"""Decide: log the decision step, and turn a buy or sell at or above the rule's confidence threshold into an
order for the paper account's approval (A-shares only; crypto rules decide and log, the account is in CNY).
On live data whose latest bar of the rule's stock is older than the last trading day, the run holds: no order on
stale data (the decision step and the result say so). A rule has one order card at a time: the order is proposed
only once this execution holds the rule's card claim (tools.broker.proposal_claims), which the approval gives
back when it is over (and report, whatever the run decided). The decision, its logged step and the order's reason
name the session the run decided as of."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import ROUND_DOWN, Decimal
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.context import workspace
from graphs.order.deps import accounts
from graphs.order.roles import NO_REASON, RULES_SWITCHED_OFF
from graphs.progress import report_progress
from graphs.rule.deps import RuleDeps
from graphs.rule.logbook import log_step
from graphs.rule.nodes.act import as_of_date, bars_name
from graphs.rule.state import RuleRunState
from tools.broker.boards import OrderRuleError
from tools.broker.clock import day
from tools.broker.freshness import stale_bar
from tools.broker.market import closes
from tools.broker.money import price_of
from tools.broker.proposal_claims import claim_proposal
from tools.broker.rules import lot_rule
from tools.broker.store import last_switch, switch_state
from tools.data.klines import symbol_kind
from tools.i18n import N_, _
from tools.rules.store import order_tag

ACTIONS = {"buy": N_("buy"), "sell": N_("sell"), "hold": N_("hold")}  # a decision, as its notes say it


def decide_node(state: RuleRunState, runtime: Runtime[RuleDeps], config: RunnableConfig,
                ) -> dict[str, Any]:
    ctx, rule, decision = runtime.context, state["rule"], dict(state["decision"] or {})
    history = list(state.get("history") or [])
    if as_of_date(state):
        decision["as_of"] = as_of_date(state)
    stale = _stale(ctx, rule)
    if stale is not None:
        decision = _held_on_stale_data(decision, stale)
        if history and history[-1]["type"] == "decision":
            history[-1] = {**history[-1], "action": {k: decision[k] for k in ("action", "reason", "confidence")}}
    if history and history[-1]["type"] == "decision":
        log_step(ctx, state, history[-1], {"decision": decision})
    report_progress(_("decision"), f"{_(ACTIONS.get(decision['action'], decision['action']))} "
                                   f"({decision['confidence']:.2f})")
    intent, note = _order(ctx, state, config, rule, decision)
    return {"decision": {**decision, "note": note}, "order_intent": intent or {}, "history": history}


def _stale(ctx: RuleDeps, rule: dict[str, Any]) -> str | None:
    """Why the rule's data is stale (A-shares on live data, at the rule store's clock), or None."""
    if ctx.paper is None or symbol_kind(rule["symbol"]) != "a-share":
        return None
    now = ctx.rules.clock() if ctx.rules is not None else datetime.now(UTC)
    found = stale_bar(ctx.provider, rule["symbol"], now, ctx.paper.live_data_days)
    return None if found is None else found.text()


def _held_on_stale_data(decision: dict[str, Any], stale: str) -> dict[str, Any]:
    """Hold instead of the decision made on stale data, keeping what it was."""
    made = f"{decision['action']} ({float(decision['confidence']):.2f}): {decision['reason']}"
    return {**decision, "action": "hold", "confidence": 0.0, "stale": stale, "overruled": made,
            "reason": _("no order on {stale}; the decision on that data was {made}").format(stale=stale, made=made)}


def _order(ctx: RuleDeps, state: RuleRunState, config: RunnableConfig, rule: dict[str, Any],
           decision: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    action, confidence = decision["action"], float(decision["confidence"])
    if action == "hold":
        return None, _("hold: nothing to do")
    if confidence < float(rule["threshold"]):
        threshold = float(rule["threshold"])
        return None, _("confidence {confidence} is below the rule's threshold {threshold}: no order").format(
            confidence=f"{confidence:.2f}", threshold=f"{threshold:.2f}")
    if symbol_kind(rule["symbol"]) != "a-share":
        return None, _("crypto rules produce decisions and logs, not orders (the paper account trades A-shares)")
    if not switch_state(ctx.engine)[0]:  # the kill switch: no proposal until trading is on again
        last = last_switch(ctx.engine, "trading off")
        return None, _(RULES_SWITCHED_OFF).format(why=last[3] if last else _(NO_REASON))
    blocked = _claim(ctx, state, action)
    if blocked:
        return None, blocked
    held, waiting = accounts(ctx).tagged_position(rule_account(rule), rule["symbol"], order_tag(rule["id"]))
    if waiting:
        return None, _("{action}: an order of this rule is still open; no new order until it fills or expires").format(
            action=_(ACTIONS[action]))
    if action == "sell":
        if held <= 0:
            return None, _("sell: the rule holds no position, so there is nothing to sell")
        return _intent(rule, "sell", held, decision, state["execution_id"]), _("sell the rule's {n} shares").format(
            n=f"{held:,}")
    if held > 0:
        return None, _("buy: the rule already holds {n} shares").format(n=f"{held:,}")
    quantity, why = _buy_quantity(ctx, state, config, rule)
    if quantity <= 0:
        return None, why
    return _intent(rule, "buy", quantity, decision, state["execution_id"]), why


def _claim(ctx: RuleDeps, state: RuleRunState, action: str) -> str | None:
    """Claim the rule's one order card for this execution; None when it holds it, else why not. Two order cards
    of one rule (two schedule ticks, a tick and a manual run) would each be sized on the same position, so a
    trader approving both would double it. The claim comes before the position is read: it is free again only
    once the last card's order is placed, so the read sees that order. The approval gives it back, and report
    whatever the run decided; an abandoned claim lapses by itself after the card's expiry."""
    if ctx.rules is None or ctx.paper is None:
        return _("this process has no rule store or paper account configured: no order")
    rule, execution_id = state["rule"], state["execution_id"]
    claim = claim_proposal(ctx.engine, rule_account(rule), rule["symbol"], order_tag(rule["id"]), execution_id,
                           ctx.paper.order_ttl, ctx.rules.clock())
    if claim.holder == execution_id:
        return None
    return _("{action}: an order proposal of this rule (execution {execution}) is waiting for a trader's approval; no "
             "new order until it is decided or expires").format(action=_(ACTIONS[action]), execution=claim.holder)


def _buy_quantity(ctx: RuleDeps, state: RuleRunState, config: RunnableConfig,
                  rule: dict[str, Any]) -> tuple[int, str]:
    code = rule["symbol"]
    if rule.get("size"):
        return int(rule["size"]), _("buy {n} shares (the rule's size)").format(n=f"{int(rule['size']):,}")
    value = Decimal(str(rule.get("value_cny") or "0"))
    if value <= 0:
        return 0, _("the rule has no order size (size=SHARES or value=CNY): no order")
    price = _last_close(ctx, state, config, code)
    if price is None:
        return 0, _("no recent close of {code} to size the order: no order").format(code=code)
    last = as_of_date(state) or ctx.provider.last_date() or ""
    try:
        lot = lot_rule(code, day(last))
    except OrderRuleError as exc:
        return 0, _("{error}: no order").format(error=exc)
    shares = int((value / price).to_integral_value(rounding=ROUND_DOWN))
    quantity = lot.round_down(shares)
    if quantity <= 0:
        return 0, _("value {value} CNY buys less than one lot of {code} at {price}: no order").format(
            value=value, code=code, price=price)
    return quantity, _("buy {n} shares: {value} CNY at the last close {price}, in whole lots").format(
        n=f"{quantity:,}", value=value, price=price)


def _last_close(ctx: RuleDeps, state: RuleRunState, config: RunnableConfig, code: str) -> Decimal | None:
    ws = workspace(ctx, config)
    name = bars_name(state["execution_id"])
    if name in ws:
        return price_of(ws.get(name)["close"].iloc[-1])
    last = as_of_date(state) or ctx.provider.last_date()
    found = closes(ctx.provider, [code], last) if last else {}
    return found[code][0] if code in found else None


def rule_account(rule: dict[str, Any]) -> str:
    """The paper account a rule trades in: its own, else its channel's (named after the channel), wherever the run
    was started, so its position and its one order card live in one account."""
    return str(rule.get("account") or rule["channel"])


def _intent(rule: dict[str, Any], side: str, quantity: int, decision: dict[str, Any], execution_id: str,
            ) -> dict[str, Any]:
    as_of = _(" as of {day}").format(day=decision["as_of"]) if decision.get("as_of") else ""
    return {"ts_code": rule["symbol"], "side": side, "quantity": quantity, "price_type": "market",
            "limit_price": None, "account": rule_account(rule), "proposed_by": rule["owner"],
            "tag": order_tag(rule["id"]), "claim": execution_id,
            "reason": _("rule {id}{as_of}: {reason} (confidence {confidence})").format(
                id=rule["id"], as_of=as_of, reason=decision["reason"],
                confidence=f"{float(decision['confidence']):.2f}")}
