"""The one interface every broker implements (see ARCHITECTURE.md): the paper broker now, real brokers later. The
graphs speak only this."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal, Protocol

from tools.broker.clock import Clock
from tools.broker.orders import Account, Fill, Order, OrderRequest, Position, Preview

OrderScope = Literal["open", "today", "all"]


class Broker(Protocol):
    """One trading account."""

    def clock(self) -> Clock:
        """Live, or simulated on static data with its session date (which session an order fills in)."""

    def account(self) -> Account:
        """Cash, what is held back for open buys, and the positions marked at the latest closes."""

    def positions(self) -> tuple[Position, ...]: ...

    def preview(self, request: OrderRequest) -> Preview:
        """Every pre-trade check, the estimated cost and fees, and cash and position after the order."""

    def submit(self, request: OrderRequest) -> Order:
        """Place an approved order; idempotent on `client_order_id` (a repeat returns the first order). Raises
        OrderRejected naming the rule that stopped it."""

    def cancel(self, order_id: int, by: str | None) -> Order:
        """Cancel an order that has not filled yet."""

    def orders(self, scope: OrderScope = "open") -> tuple[Order, ...]: ...

    def fills(self) -> tuple[Fill, ...]: ...

    def mark(self, day: str) -> None:
        """Mark the account to market at `day`'s closes (the equity curve's point for that day)."""

    def marks(self) -> list[tuple[str, Decimal, Decimal, Decimal]]:
        """The equity curve: (date, cash, market value, equity), oldest first."""

    def realised(self) -> Decimal:
        """Realised P&L over every position, closed ones included."""
