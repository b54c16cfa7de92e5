"""Authorize: the node after every order approval. It checks the decider against the trader policy (on every
path: Slack, console, Studio, SDK), the proposal's expiry (a card made on the simulated clock also lapses when that
clock moves) and an edit against the rules, and records each outcome in the order audit trail. A refused decision
asks again; nothing is placed. An edit is never placed as it comes: its order is previewed again (every check) and
shown as a new card, to be decided again; an edit whose order fails a check is not applied (the card stays as it
was, still waiting, and says which checks the edited order failed)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.context import AUTH_USER, decider, thread_id
from graphs.interrupts import validate_args
from graphs.order.card import edit_schema, expiry_text, order_card, order_line
from graphs.order.deps import OrderDeps, broker_for
from graphs.order.four_eyes import needs_two, second_refusal
from graphs.order.payload import preview_json, request_of
from graphs.order.roles import CARD_SWITCHED_OFF, NO_REASON, trader_refusal
from graphs.order.staleness import RECHECKED, stale_changes
from graphs.order.state import OrderApprovalState
from tools.broker.proposal_claims import fit_claims_to_card
from tools.broker.store import last_switch, log_event
from tools.data.schema import DataError
from tools.i18n import N_, _, pgettext

STILL_WAITS = N_("The card still waits, with the order as it was.")


def authorize_node(state: OrderApprovalState, runtime: Runtime[OrderDeps], config: RunnableConfig,
                   ) -> dict[str, Any]:
    ctx = runtime.context
    decision, who = state["decision"], state.get("decided_by")
    if AUTH_USER in config.get("configurable", {}):  # Agent Server: only the identity resuming this run decides,
        who = decider(config)  # never a decided_by written into the state some other way
    kind, cid, account, proposal = decision.get("type"), state["client_order_id"], state["account"], state["proposal"]
    refusals = list(state.get("refusals") or [])
    if kind == "reject":
        reason = str(decision.get("message") or "").strip()
        log_event(ctx.engine, cid, account, "rejected", who, {"reason": reason or NO_REASON})
        return _done("rejected", _("Order rejected by {who}: {reason}. Nothing was placed.").format(
            who=who or _("an unnamed caller"), reason=reason or _(NO_REASON)), state)
    if kind not in ("approve", "edit"):
        return _again(refusals, _("a {kind} decision does not decide an order: approve, edit or reject it").format(
            kind=kind))
    word = decision_word(kind)
    refused = trader_refusal(ctx, who, account, word)
    if refused:
        log_event(ctx.engine, cid, account, "refused", who, {"decision": kind, "reason": "not a trader"})
        return _again(refusals, refused)
    assert who is not None  # trader_refusal refuses an unnamed caller
    if datetime.fromisoformat(state["decided_at"]) > datetime.fromisoformat(proposal["expires_at"]):
        log_event(ctx.engine, cid, account, "expired", who, {"decision": kind, "decided_at": state["decided_at"]})
        return _done("expired", _("This order proposal expired at {at}, before {who}'s {kind}; nothing was placed. "
                                  "Propose it again for a fresh check.").format(
            at=expiry_text(proposal["expires_at"]), who=who, kind=word), state)
    off = last_switch(ctx.engine, "trading off", datetime.fromisoformat(state["proposed_at"])) \
        if state.get("proposed_at") else None
    if off is not None:
        _event, by, at, why = off
        log_event(ctx.engine, cid, account, "expired", who, {"decision": kind, "trading_off": by, "reason": why})
        return _done("expired", _(CARD_SWITCHED_OFF).format(who=by, at=at, why=why, decider=who, kind=word), state)
    moved = _clock_moved(ctx, account, proposal)
    if moved is not None:
        log_event(ctx.engine, cid, account, "expired", who, {"decision": kind, "session": proposal["session_date"],
                                                            "clock": moved})
        return _done("expired", _("This order proposal was for the simulated session {session}, and the simulated "
                                  "clock has moved to {day} since, before {who}'s {kind}; nothing was placed. Propose "
                                  "it again for a fresh check.").format(
            session=proposal["session_date"], day=moved, who=who, kind=word), state)
    if kind == "approve":
        if not proposal["passed"]:
            return _again(refusals, _("approve is not possible while checks fail: edit or reject the order"))
        try:
            stale = _recheck(ctx, state, who, config, refusals)
        except (DataError, ValueError) as exc:
            return _again(refusals, _("the order cannot be checked again before placing it: {error}").format(
                error=exc))
        return stale or _approve(ctx, state, who, refusals)
    edits = (decision.get("edited_action") or {}).get("args") or {}
    request = proposal["request"]
    original = {"quantity": request["quantity"], "limit_price": request.get("limit_price")}
    schema = edit_schema(proposal)
    shown = order_card(proposal, account, True, [])["args"]  # adapters send the card's other values back as shown
    args, problems = validate_args(schema, original, {k: v for k, v in edits.items() if k in schema})
    problems += [_("{name} cannot be edited").format(name=k) for k, v in edits.items()
                 if k not in schema and shown.get(k) != v]
    if problems:
        log_event(ctx.engine, cid, account, "refused", who, {"decision": "edit", "problems": problems})
        return _again(refusals, _("the edit was not applied: {problems}. {waits}").format(
            problems=_("; ").join(problems), waits=_(STILL_WAITS)))
    intent = {**state["order_intent"], "quantity": int(args["quantity"])}
    if "limit_price" in schema:
        intent["limit_price"] = f"{float(args['limit_price']):.2f}"
    try:
        preview = broker_for(ctx, account, None).preview(request_of(intent, cid, thread_id(config)))
    except (DataError, ValueError) as exc:
        return _again(refusals, _("the edited order cannot be checked: {error}").format(error=exc))
    edited = preview_json(preview)
    if not edited["passed"]:
        failed = _("; ").join(f"{_(c['name'])}: {c['detail']}" for c in edited["checks"] if not c["passed"])
        log_event(ctx.engine, cid, account, "refused", who, {"decision": "edit", "quantity": intent["quantity"],
                                                            "limit_price": intent.get("limit_price"),
                                                            "failed": failed})
        return _again(refusals, _("the edit was not applied: the edited order ({order}) fails its checks ({failed}). "
                                  "{waits}").format(order=order_line(edited), failed=failed, waits=_(STILL_WAITS)))
    if intent.get("claim"):  # the proposer's card slot lapses with the new card
        fit_claims_to_card(ctx.engine, intent["claim"], datetime.fromisoformat(edited["expires_at"]))
    log_event(ctx.engine, cid, account, "edited", who, {"quantity": intent["quantity"],
                                                       "limit_price": intent.get("limit_price"), "passed": True})
    return {"order_intent": intent, "proposal": edited, "verdict": "ask_again",
            "edited_by": who, "refusals": refusals, "approvals": []}  # approvals were of the old numbers


def decision_word(kind: str) -> str:
    """An approve or edit decision as the order's refusals name it (`before bob's approve`)."""
    return pgettext("order decision", "approve") if kind == "approve" else pgettext("order decision", "edit")


def _recheck(ctx: OrderDeps, state: OrderApprovalState, who: str, config: RunnableConfig,
             refusals: list[str]) -> dict[str, Any] | None:
    """The order previewed again on the current account and market: None when the card still holds, else the
    re-checked card to decide again (approvals so far were of the old numbers)."""
    cid, account, intent = state["client_order_id"], state["account"], state["order_intent"]
    fresh = preview_json(broker_for(ctx, account, None).preview(request_of(intent, cid, thread_id(config))))
    changes = stale_changes(state["proposal"], fresh, ctx.stale_move)
    if not changes:
        return None
    if intent.get("claim"):
        fit_claims_to_card(ctx.engine, intent["claim"], datetime.fromisoformat(fresh["expires_at"]))
    log_event(ctx.engine, cid, account, "stale", who, {"changes": changes, "passed": fresh["passed"]})
    return {"verdict": "ask_again", "proposal": fresh, "approvals": [],
            "refusals": [*refusals, _(RECHECKED).format(who=who, changes="; ".join(changes))]}


def _approve(ctx: OrderDeps, state: OrderApprovalState, who: str, refusals: list[str]) -> dict[str, Any]:
    """One trader's approval: it submits, unless the order needs two traders and this is the first (ask again)
    or cannot count as the second (refused: the same trader again, or the proposer)."""
    cid, account = state["client_order_id"], state["account"]
    if not needs_two(ctx.second_approval_above, state["proposal"]):
        log_event(ctx.engine, cid, account, "approved", who, {})
        return {"verdict": "submit"}
    approvals = list(state.get("approvals") or [])
    if not approvals:
        log_event(ctx.engine, cid, account, "approved", who, {"approval": 1, "of": 2})
        return {"verdict": "ask_again", "approvals": [who], "refusals": refusals}
    refused = second_refusal(approvals, state["order_intent"].get("proposed_by"), who)
    if refused:
        log_event(ctx.engine, cid, account, "refused", who, {"decision": "approve", "reason": refused})
        return _again(refusals, refused)
    log_event(ctx.engine, cid, account, "approved", who, {"approval": 2, "of": 2, "first": approvals[0]})
    return {"verdict": "submit", "approvals": [*approvals, who]}


def _clock_moved(ctx: OrderDeps, account: str, proposal: dict[str, Any]) -> str | None:
    """The simulated session date when the simulated clock has left the session the card was made for, else None
    (a card lapses with its simulated session as a live one does at its auction)."""
    clock = broker_for(ctx, account, None).clock()
    return clock.today if clock.simulated and clock.today != proposal["session_date"] else None


def _again(refusals: list[str], reason: str) -> dict[str, Any]:
    return {"verdict": "ask_again", "refusals": [*refusals, reason]}


def _done(status: str, message: str, state: OrderApprovalState) -> dict[str, Any]:
    return {"verdict": "done", "order_outcome": {
        "status": status, "message": message, "account": state["account"], "order": None,
        "proposal": state["proposal"], "decided_by": state.get("decided_by")}}
