"""The one interface every broker implements (see ARCHITECTURE.md): the paper broker (tools/broker/paper.py) and
the VeighNa broker (tools/broker/vnpy.py). Everything outside tools/broker/ speaks only this, and finds an account's
broker through the registry (tools/broker/accounts.py)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Literal, Protocol

from tools.broker.clock import Clock
from tools.broker.orders import Account, Difference, Fill, Order, OrderRequest, Position, Preview

OrderScope = Literal["open", "today", "all"]


class Broker(Protocol):
    """One trading account."""

    name: str  # the account's name
    kind: str  # the registered broker serving it: "paper", "vnpy"

    def clock(self) -> Clock:
        """Live, or simulated on static data with its session date (which session an order fills in)."""

    def notes(self) -> tuple[str, ...]:
        """What the account's numbers do and do not model, or where they come from."""

    def differences(self) -> list[Difference]:
        """Where the broker holds positions otherwise than the fills the desk booked make them ([] for a broker that
        is the desk's own book); raises ConnectionError when the broker does not answer."""

    def account(self) -> Account:
        """Cash, what is held back for open buys, and the positions marked at the latest closes."""

    def positions(self) -> tuple[Position, ...]: ...

    def preview(self, request: OrderRequest) -> Preview:
        """Every pre-trade check (tools/broker/pretrade.py), the estimated cost and fees, and cash and position after
        the order."""

    def submit(self, request: OrderRequest) -> Order:
        """Place an approved order; idempotent on `client_order_id` (a repeat returns the first order). Raises
        OrderRejected naming the rule that stopped it."""

    def cancel(self, order_id: int, by: str | None) -> Order:
        """Cancel an order that has not filled yet."""

    def orders(self, scope: OrderScope = "open") -> tuple[Order, ...]: ...

    def order(self, order_id: int) -> Order | None: ...

    def fills(self) -> tuple[Fill, ...]: ...

    def settle(self, now: datetime | None = None) -> list[Order]:
        """Bring the open orders up to date as of `now` (None: the wall clock): the paper broker fills those whose
        session's bar exists; a live broker takes in what its server reports. Returns the orders that changed."""

    def halt(self, by: str) -> tuple[Order, ...]:
        """Trading was switched off: cancel at the broker what must not fill now; returns the orders that changed.
        The paper broker holds its open orders (the switch stops their fills) and returns none."""

    def resolve(self, order_id: int, outcome: str, price: Decimal | None, by: str) -> Order:
        """A trader's word on an "unknown" order (tools/broker/book.py `resolve_unknown`): filled at `price`,
        cancelled, or unsent."""

    def reset(self, starting_cash: Decimal, by: str) -> None:
        """Start the account over (a simulated account only); raises AccountError where it cannot be."""

    def mark(self, day: str, now: datetime | None = None) -> None:
        """Mark the account to market at `day`'s closes (the equity curve's point for that day)."""

    def marks(self) -> list[tuple[str, Decimal, Decimal, Decimal]]:
        """The equity curve: (date, cash, market value, equity), oldest first."""

    def realised(self) -> Decimal:
        """Realised P&L over every position, closed ones included."""
