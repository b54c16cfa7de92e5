"""Views of orders and accounts for the adapters: an order's outcome, an account, a list of orders."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from graphs.order.card import checks_text, order_line
from graphs.views import Table, View
from tools.broker.money import money_text
from tools.broker.orders import SIDE_WORDS, STATUS_WORDS, Account, Order
from tools.broker.reports import AccountReport
from tools.i18n import N_, _, ngettext
from tools.storage.artifacts import ArtifactRef

TITLES = {"filled": N_("Order filled"), "open": N_("Order submitted"), "expired": N_("Order not filled"),
          "cancelled": N_("Order cancelled"), "rejected": N_("Order rejected"), "refused": N_("Order refused")}


def present_order(result: dict[str, Any]) -> View:
    """The outcome of one order approval."""
    status = str(result.get("status") or "refused")
    proposal = result.get("proposal")
    order = result.get("order")
    facts: list[tuple[str, str]] = [(_("Account"), str(result.get("account") or "-"))]
    if result.get("decided_by"):
        facts.append((_("Decided by"), str(result["decided_by"])))
    if order:
        status_word = STATUS_WORDS.get(order["status"])
        facts += [(_("Order"), f"{order['id']} ({_(status_word) if status_word else order['status']})"),
                  (_("Session"), order["session_date"])]
        for fill in order.get("fills") or []:
            facts += [(_("Fill"), _("{n} at {price} on {day}").format(n=f"{int(fill['quantity']):,}",
                                                                       price=fill["price"], day=fill["trade_date"])),
                      (_("Value"), money_text_of(fill["value"])), (_("Fees"), fee_text(fill))]
    lines = [order_line(proposal)] if proposal else []
    notes = list(proposal.get("notes") or []) if proposal else []
    warnings = [line for check, line in zip(proposal["checks"], checks_text(proposal), strict=True)
                if not check["passed"]] if proposal else []
    users = [str(result["decided_by"])] if result.get("decided_by") else []
    title = _(TITLES[status]) if status in TITLES else _("Order {status}").format(status=status)
    return View(title=title, summary=str(result.get("message") or status),
                lines=lines, facts=facts, notes=notes, warnings=warnings, users=users,
                accounts=[str(result["account"])] if result.get("account") else [])


def money_text_of(text: str) -> str:
    return money_text(Decimal(text))


def fee_text(fill: dict[str, Any]) -> str:
    parts = [(_("commission"), fill["commission"]), (_("stamp duty"), fill["stamp_duty"]),
             (_("transfer"), fill["transfer_fee"]), (_("handling"), fill["handling_fee"]),
             (_("regulator"), fill["regulator_fee"])]
    return ", ".join(f"{name} {value}" for name, value in parts if value not in ("0", "0.00"))


def present_account(account: Account, report: AccountReport, notes: tuple[str, ...], trading: str,
                    chart: ArtifactRef | None) -> View:
    rows = [[p.ts_code, p.name or "", f"{p.quantity:,}", f"{p.sellable:,}", str(p.price or "-"),
             money_text(p.value) if p.value is not None else "-", money_text(p.cost),
             money_text(p.unrealised) if p.unrealised is not None else "-"] for p in account.positions]
    clock = (_("the simulated session; `clock` shows and moves it") if account.clock == "simulated"
             else _("live clock (Asia/Shanghai)"))
    return View(
        title=(_("Paper account {name}").format(name=account.name) if account.live_at is None else
               _("Account {name} ({where})").format(name=account.name, where=account.live_at)),
        summary=_("Equity {equity} CNY ({pnl} since the start), cash {cash} of which {reserved} held for open "
                  "buys.").format(equity=money_text(report.equity), pnl=f"{report.total_pnl:+,.2f}",
                                  cash=money_text(account.cash), reserved=money_text(account.reserved)),
        lines=[_("As of {day} ({clock}); trading is {trading}.").format(day=account.today, clock=clock,
                                                                        trading=_(trading))],
        facts=[(_("Starting cash"), money_text(account.starting_cash)),
               (_("Market value"), money_text(account.market_value)),
               (_("Total P&L"), f"{report.total_pnl:+,.2f}"), (_("Realised P&L"), f"{report.realised:+,.2f}"),
               (_("Unrealised P&L"), f"{report.unrealised:+,.2f}"), (_("Max drawdown"), f"{report.max_drawdown:.2%}"),
               (_("Exposure"), _("{share} of equity").format(share=f"{report.exposure:.1%}")),
               (_("Marks"), str(report.marks))],
        table=Table([_("code"), _("name"), _("qty"), _("sellable"), _("price"), _("value"), _("cost"),
                     _("unrealised")], rows)
        if rows else None,
        notes=[*notes, _("cost includes buy fees; sells reduce it pro rata; marks use the latest close")],
        accounts=[account.name],
        artifacts=[chart] if chart else [])


# `orders [open|today|all]`: how the count names each scope (`all` counts every order, not "all orders")
NO_ORDERS = {"open": N_("No open orders in account {account}."), "today": N_("No orders today in account {account}."),
             "all": N_("No orders in account {account}.")}


def _order_count(scope: str, n: int) -> str:
    """`n` (one or more) orders of the scope, as a template of {n} and {account}."""
    if scope == "open":
        return ngettext("{n} open order in account {account}", "{n} open orders in account {account}", n)
    if scope == "today":
        return ngettext("{n} order today in account {account}", "{n} orders today in account {account}", n)
    return ngettext("{n} order in account {account}", "{n} orders in account {account}", n)


ORDERS_TITLES = {"open": N_("Orders (open) · {account}"), "today": N_("Orders (today) · {account}"),
                 "all": N_("Orders (all) · {account}")}


def present_orders(name: str, scope: str, orders: tuple[Order, ...]) -> View:
    rows = [[str(o.id), o.session_date, _(SIDE_WORDS[o.side]) if o.side in SIDE_WORDS else o.side, o.ts_code,
             f"{o.quantity:,}", str(o.limit_price) if o.limit_price is not None else _("market"),
             _(STATUS_WORDS[o.status]) if o.status in STATUS_WORDS else o.status,
             str(o.fills[-1].price) if o.fills else "-", o.approved_by or "-"] for o in orders]
    summary = (_order_count(scope, len(orders)) if orders else _(NO_ORDERS[scope])).format(n=len(orders),
                                                                                           account=name)
    return View(title=_(ORDERS_TITLES[scope]).format(account=name), summary=summary,
                table=Table([_("id"), _("session"), _("side"), _("code"), _("qty"), _("price"), _("status"),
                             _("fill"), _("approved by")], rows)
                if rows else None, users=[u for o in orders for u in (o.approved_by or "").split(",") if u],
                accounts=[name])
