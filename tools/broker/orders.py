"""What the broker takes and gives back: order requests, orders, fills, positions, the account, rule checks.
All money is Decimal yuan to the fen; quantities are whole shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from tools.broker.notes import note_text
from tools.i18n import N_, _

Side = Literal["buy", "sell"]
PriceType = Literal["market", "limit"]
OrderStatus = Literal["open", "filled", "cancelled", "expired", "rejected", "unknown"]
SIDES: tuple[str, ...] = ("buy", "sell")
SIDE_WORDS = {"buy": N_("BUY"), "sell": N_("SELL")}
STATUS_WORDS = {"open": N_("open"), "filled": N_("filled"), "cancelled": N_("cancelled"), "expired": N_("expired"),
                "rejected": N_("rejected"), "unknown": N_("unknown")}  # the last two: a live broker's
ENDED = {"filled": N_("Order {id} filled: {what}. {note}"), "cancelled": N_("Order {id} cancelled: {what}. {note}"),
         "expired": N_("Order {id} expired: {what}. {note}"), "rejected": N_("Order {id} rejected: {what}. {note}"),
         "unknown": N_("Order {id} is unknown: {what}. {note}")}  # what happened to an order that is no longer open


class OrderRejected(ValueError):
    """The broker refused an order; `checks` name every rule and whether it passed."""

    def __init__(self, message: str, checks: tuple[Check, ...] = ()) -> None:
        super().__init__(message)
        self.checks = checks


@dataclass(frozen=True)
class OrderRequest:
    """An order as proposed: submit() is idempotent on `client_order_id`."""

    client_order_id: str
    ts_code: str
    side: Side
    quantity: int
    price_type: PriceType = "market"
    limit_price: Decimal | None = None
    reason: str = ""
    thread_id: str | None = None
    proposed_by: str | None = None
    approved_by: str | None = None
    tag: str | None = None  # the proposer's tag, e.g. rule:12, whose position follows this order's fills


@dataclass(frozen=True)
class Check:
    """One pre-trade rule: whether the order passes it, and why."""

    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Fill:
    id: int
    order_id: int
    ts_code: str
    side: Side
    quantity: int
    price: Decimal
    value: Decimal
    commission: Decimal
    stamp_duty: Decimal
    transfer_fee: Decimal
    handling_fee: Decimal
    regulator_fee: Decimal
    trade_date: str
    basis: str

    @property
    def fees(self) -> Decimal:
        return self.commission + self.stamp_duty + self.transfer_fee + self.handling_fee + self.regulator_fee


@dataclass(frozen=True)
class Order:
    id: int
    client_order_id: str
    account: str
    ts_code: str
    name: str | None
    side: Side
    quantity: int
    price_type: PriceType
    limit_price: Decimal | None
    session_date: str
    fill_at: str
    status: OrderStatus
    reserved: Decimal
    thread_id: str | None
    approved_by: str | None
    reason: str
    note: str
    created: str  # ISO time
    fills: tuple[Fill, ...] = ()

    def summary(self) -> str:
        """What happened to the order, in a sentence or two."""
        what = _("{side} {quantity} {code}").format(side=_(SIDE_WORDS[self.side]), quantity=f"{self.quantity:,}",
                                                    code=self.ts_code)
        if self.status == "filled" and self.fills:
            fill = self.fills[-1]
            fees = sum((f.fees for f in self.fills), Decimal("0.00"))
            return _("Order {id} filled: {what} at {price} on {day} ({basis}); value {value}, fees {fees}.").format(
                id=self.id, what=what, price=fill.price, day=fill.trade_date, basis=note_text(fill.basis),
                value=f"{fill.value:,.2f}", fees=f"{fees:,.2f}")
        if self.status == "open":
            return _("Order {id} submitted: {what}, {note}. `cancel {id}` cancels it until then.").format(
                id=self.id, what=what, note=note_text(self.note))
        return _(ENDED[self.status]).format(id=self.id, what=what, note=note_text(self.note))


DIFFERENCE = N_("reconciliation: the broker holds {broker} of {code}, QuantDesk's fills make {expected}")


@dataclass(frozen=True)
class Difference:
    """A position the broker holds otherwise than the fills the desk booked make it: said, never overwritten."""

    ts_code: str
    broker: int  # shares the broker holds
    expected: int  # shares the desk's fills make

    def line(self) -> str:
        """In the language in effect."""
        return _(DIFFERENCE).format(code=self.ts_code, broker=f"{self.broker:,}", expected=f"{self.expected:,}")


@dataclass(frozen=True)
class Position:
    ts_code: str
    name: str | None
    quantity: int
    sellable: int  # T+1: not what was bought today, nor what open sells hold
    cost: Decimal  # buy value plus buy fees, reduced pro rata by sells
    realised: Decimal
    price: Decimal | None  # the mark: the latest close on or before the account's today
    price_date: str | None

    @property
    def value(self) -> Decimal | None:
        return None if self.price is None else (self.price * self.quantity).quantize(Decimal("0.01"))

    @property
    def unrealised(self) -> Decimal | None:
        return None if self.value is None else self.value - self.cost


@dataclass(frozen=True)
class Account:
    name: str
    starting_cash: Decimal
    cash: Decimal
    reserved: Decimal  # held back for open buys
    today: str  # the account's trading day (YYYYMMDD)
    clock: str  # live, simulated
    price_basis: str  # unadjusted, forward-adjusted, unknown
    positions: tuple[Position, ...] = field(default=())
    live_at: str | None = None  # a live broker's account: where it trades (e.g. "XTP through VeighNa"); None: paper

    @property
    def available(self) -> Decimal:
        return self.cash - self.reserved

    @property
    def market_value(self) -> Decimal:
        return sum((p.value or Decimal(0) for p in self.positions), Decimal("0.00"))

    @property
    def equity(self) -> Decimal:
        return self.cash + self.market_value


@dataclass(frozen=True)
class Preview:
    """Everything a trader needs to judge an order before it is submitted."""

    request: OrderRequest
    name: str | None
    session_date: str
    fill_at: str  # open, close
    fill_label: str  # how and when it would fill, in words
    reference_price: Decimal | None  # the price the estimate uses
    estimated_value: Decimal
    estimated_fees: Decimal
    cash_after: Decimal
    position_after: int
    limit_up: Decimal | None
    limit_down: Decimal | None
    checks: tuple[Check, ...]
    notes: tuple[str, ...]  # price basis, approximations
    expires_at: str  # ISO time after which the proposal cannot be approved
    mandate: tuple[str, ...] = ()  # the account's mandate, one line each (empty: none)
    lapses_after_session: str | None = None  # on the simulated clock: the session (YYYYMMDD) it cannot outlive

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if not c.passed)
