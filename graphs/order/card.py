"""The order approval card: everything a trader needs to judge the order, as an `approval` interrupt that only
traders may approve or edit."""

from __future__ import annotations

import contextlib
from datetime import datetime
from decimal import Decimal
from typing import Any

from graphs.interrupts import TRADERS, approval_request
from graphs.views import refs
from tools.broker.boards import OrderRuleError
from tools.broker.clock import SHANGHAI, day
from tools.broker.money import money_text
from tools.broker.notes import note_text
from tools.broker.rules import MAX_ORDER_QUANTITY, MAX_PRICE, lot_rule, max_order_quantity
from tools.i18n import N_, _

ACTION = "place_order"
NO_TRADERS = N_("Nobody is a trader, so nobody can approve this order: an admin grants the role with `roles grant "
                "trader USER` (QUANTDESK_TRADERS seeds it on a new database only). It can still be rejected.")
WHO = N_("Only traders (`roles` lists them) can approve or edit this order; the requester or a trader can reject "
         "it.")
# the card's fields, as its keys read (the surfaces show a key's label translated)
FIELDS = (N_("Order"), N_("Quantity"), N_("Limit price"), N_("Account"), N_("Estimated cost"), N_("Cash after"),
          N_("Position after"), N_("Fills"), N_("Expires"), N_("Why"), N_("Mandate"), N_("Approvals"))


def order_line(proposal: dict[str, Any]) -> str:
    """BUY 1,000 600519.SH 贵州茅台 at market."""
    request = proposal["request"]
    name = f" {proposal['name']}" if proposal.get("name") else ""
    price = (_("limit {price}").format(price=request["limit_price"]) if request["price_type"] == "limit" else
             _("market"))
    side = _("BUY") if request["side"] == "buy" else _("SELL")
    return _("{side} {quantity} {code}{name} at {price}").format(side=side, quantity=f"{int(request['quantity']):,}",
                                                                 code=request["ts_code"], name=name, price=price)


def expiry_text(iso: str) -> str:
    return datetime.fromisoformat(iso).astimezone(SHANGHAI).strftime("%Y-%m-%d %H:%M Asia/Shanghai")


def card_expiry_text(proposal: dict[str, Any]) -> str:
    """When the card lapses: its time and, on the simulated clock, the session it cannot outlive."""
    at = expiry_text(proposal["expires_at"])
    session = proposal.get("lapses_after_session")
    return _("{at}, or when the simulated clock moves on from {session}").format(at=at, session=session) \
        if session else at


def checks_text(proposal: dict[str, Any]) -> list[str]:
    marks = {True: _("PASS"), False: _("FAIL")}
    return [_("{mark} {check}: {detail}").format(mark=marks[bool(c["passed"])], check=_(c["name"]), detail=c["detail"])
            for c in proposal["checks"]]


def order_card(proposal: dict[str, Any], account: str, traders_configured: bool,
               refusals: list[str], edited_by: str | None = None, approvals: str | None = None) -> dict[str, Any]:
    """The card; `edited_by`: the order is an edit of an earlier card (by that trader), its checks run again;
    `approvals`: who approved so far, when the order needs two traders."""
    request = proposal["request"]
    value, fees = Decimal(proposal["estimated_value"]), Decimal(proposal["estimated_fees"])
    args: dict[str, Any] = {"order": order_line(proposal), "quantity": int(request["quantity"])}
    if request["price_type"] == "limit":
        args["limit_price"] = request["limit_price"]
    args.update({
        "account": account,
        "estimated_cost": _("{value} + fees {fees}").format(value=money_text(value), fees=money_text(fees))
                          + (_(" at {price}").format(price=proposal["reference_price"])
                             if proposal.get("reference_price") else ""),
        "cash_after": money_text(Decimal(proposal["cash_after"])),
        "position_after": _("{n} shares").format(n=f"{int(proposal['position_after']):,}"),
        "fills": note_text(proposal["fill_label"]),
        "expires": card_expiry_text(proposal),
        "why": request.get("reason") or "-",
        "mandate": _("; ").join(proposal.get("mandate") or ()) or _("none"),
    })
    if approvals:
        args["approvals"] = approvals
    passed = bool(proposal["passed"])
    allowed: tuple[str, ...] = ("reject",)
    if traders_configured:
        allowed = (("approve",) if passed else ()) + ("edit", "reject")
    checks = list(zip((bool(c["passed"]) for c in proposal["checks"]), checks_text(proposal), strict=True))
    failed = [line for ok, line in checks if not ok]
    lines = [_("Edited by {user}: every check ran again on the edited order; decide it again.").format(
        user=edited_by)] if edited_by else []
    lines += [_("All checks pass.") if passed else refused_text(allowed), *failed, *(line for ok, line in checks if ok),
              *(_("Note: {note}").format(note=n) for n in proposal.get("notes") or [])]
    lines += [_("Refused: {reason}").format(reason=r) for r in refusals]
    payload = approval_request(ACTION, order_line(proposal), args, "\n".join(lines),
                               _("The order is not placed; the rejection and its reason are recorded."), allowed,
                               args_schema=edit_schema(proposal) if "edit" in allowed else None)
    payload.update(deciders=TRADERS, who_decides=_(WHO) if traders_configured else _(NO_TRADERS),
                   expires_at=proposal["expires_at"])
    if not passed:  # refused by its checks: the surfaces say so first; approving is not offered
        payload["failed"] = [_("{check}: {detail}").format(check=_(c["name"]), detail=c["detail"])
                             for c in proposal["checks"] if not c["passed"]]
    payload.update(refs([request.get("proposed_by"), edited_by], [account]))
    return payload


def refused_text(allowed: tuple[str, ...]) -> str:
    """What a card its checks refuse says first: refused, and what the person can do."""
    return (_("Refused by the checks (failed first below): it cannot be approved as it is. Edit it (every check runs "
              "again) or reject it.") if "edit" in allowed else
            _("Refused by the checks (failed first below): it cannot be approved as it is. Reject it."))


def edit_schema(proposal: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What a trader may change: the quantity (in the board's lots for buys) and a limit order's price (within
    the day's price limits)."""
    request = proposal["request"]
    quantity: dict[str, Any] = {"type": "integer", "title": _("Quantity (shares)"), "minimum": 1,
                                "maximum": MAX_ORDER_QUANTITY}
    with contextlib.suppress(OrderRuleError):  # a code no board trades: the broker's check names it
        quantity["maximum"] = max_order_quantity(request["ts_code"], request["price_type"])
    if request["side"] == "buy":
        try:
            rule = lot_rule(request["ts_code"], day(proposal["session_date"]))
            quantity["minimum"] = rule.minimum
            if rule.step > 1:
                quantity["multiple_of"] = rule.step
        except OrderRuleError:
            pass
    schema = {"quantity": quantity}
    if request["price_type"] == "limit":
        price: dict[str, Any] = {"type": "number", "title": _("Limit price (CNY)"), "minimum": 0.01,
                                 "maximum": float(MAX_PRICE), "decimals": 2}
        if proposal.get("limit_down"):
            price["minimum"] = float(proposal["limit_down"])
        if proposal.get("limit_up"):
            price["maximum"] = float(proposal["limit_up"])
        schema["limit_price"] = price
    return schema
