"""Views of orders and accounts for the adapters: an order's outcome, an account, a list of orders."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from graphs.order.card import checks_text, order_line
from graphs.views import Table, View
from tools.broker.money import money_text
from tools.broker.orders import Account, Order
from tools.broker.reports import AccountReport

TITLES = {"filled": "Order filled", "open": "Order submitted", "expired": "Order not filled",
          "cancelled": "Order cancelled", "rejected": "Order rejected", "refused": "Order refused"}


def present_order(result: dict[str, Any]) -> View:
    """The outcome of one order approval."""
    status = str(result.get("status") or "refused")
    proposal = result.get("proposal")
    order = result.get("order")
    facts: list[tuple[str, str]] = [("Account", str(result.get("account") or "-"))]
    if result.get("decided_by"):
        facts.append(("Decided by", str(result["decided_by"])))
    if order:
        facts += [("Order", f"{order['id']} ({order['status']})"), ("Session", order["session_date"])]
        for fill in order.get("fills") or []:
            facts += [("Fill", f"{int(fill['quantity']):,} at {fill['price']} on {fill['trade_date']}"),
                      ("Value", money_text_of(fill["value"])), ("Fees", fee_text(fill))]
    lines = [order_line(proposal)] if proposal else []
    notes = list(proposal.get("notes") or []) if proposal else []
    warnings = [line for line in checks_text(proposal) if line.startswith("FAIL")] if proposal else []
    users = [str(result["decided_by"])] if result.get("decided_by") else []
    return View(title=TITLES.get(status, f"Order {status}"), summary=str(result.get("message") or status),
                lines=lines, facts=facts, notes=notes, warnings=warnings, users=users)


def money_text_of(text: str) -> str:
    return money_text(Decimal(text))


def fee_text(fill: dict[str, Any]) -> str:
    parts = [("commission", fill["commission"]), ("stamp duty", fill["stamp_duty"]),
             ("transfer", fill["transfer_fee"]), ("handling", fill["handling_fee"]),
             ("regulator", fill["regulator_fee"])]
    return ", ".join(f"{name} {value}" for name, value in parts if value not in ("0", "0.00"))


def present_account(account: Account, report: AccountReport, notes: tuple[str, ...], trading: str,
                    chart: dict[str, Any] | None) -> View:
    rows = [[p.ts_code, p.name or "", f"{p.quantity:,}", f"{p.sellable:,}", str(p.price or "-"),
             money_text(p.value) if p.value is not None else "-", money_text(p.cost),
             money_text(p.unrealised) if p.unrealised is not None else "-"] for p in account.positions]
    clock = ("the simulated session; `clock` shows and moves it" if account.clock == "simulated"
             else "live clock (Asia/Shanghai)")
    return View(
        title=f"Paper account {account.name}",
        summary=f"Equity {money_text(report.equity)} CNY ({report.total_pnl:+,.2f} since the start), cash "
                f"{money_text(account.cash)} of which {money_text(account.reserved)} held for open buys.",
        lines=[f"As of {account.today} ({clock}); trading is {trading}."],
        facts=[("Starting cash", money_text(account.starting_cash)), ("Market value", money_text(account.market_value)),
               ("Total P&L", f"{report.total_pnl:+,.2f}"), ("Realised P&L", f"{report.realised:+,.2f}"),
               ("Unrealised P&L", f"{report.unrealised:+,.2f}"), ("Max drawdown", f"{report.max_drawdown:.2%}"),
               ("Exposure", f"{report.exposure:.1%} of equity"), ("Marks", str(report.marks))],
        table=Table(["code", "name", "qty", "sellable", "price", "value", "cost", "unrealised"], rows)
        if rows else None,
        notes=[*notes, "cost includes buy fees; sells reduce it pro rata; marks use the latest close"],
        artifacts=[chart] if chart else [])


def present_orders(name: str, scope: str, orders: tuple[Order, ...]) -> View:
    rows = [[str(o.id), o.session_date, o.side, o.ts_code, f"{o.quantity:,}",
             str(o.limit_price) if o.limit_price is not None else "market", o.status,
             str(o.fills[-1].price) if o.fills else "-", o.approved_by or "-"] for o in orders]
    kind = "" if scope == "all" else f"{scope} "  # `orders all`: every order, not "all orders" counted
    count = f"{len(orders)} {kind}order{'' if len(orders) == 1 else 's'}" if orders else f"No {kind}orders"
    summary = f"{count} in account {name}" + ("" if orders else ".")
    return View(title=f"Orders ({scope}) · {name}", summary=summary,
                table=Table(["id", "session", "side", "code", "qty", "price", "status", "fill", "approved by"], rows)
                if rows else None)
