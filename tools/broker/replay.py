"""The replay account: a paper account in memory that lives for one replay of the decision desk over past dates.

Only a replay trades here, and its orders need no approval: each fills in full at the decision date's close, with
the paper account's costs (`tools.broker.fees`: commission and its minimum, stamp duty on sells, transfer fee), in
integer fen. Positions bought on a date are sellable from the next trading day (T+1). `account()` gives the account
as it stands on a day, marked at that day's closes, for the desk's fusion (cash, positions, drawdown) and its
trader. `to_json` and `from_json` carry the ledger through a checkpoint exactly (integer fen, decimal text), so a
replay resumed after a crash goes on from the ledger of its last finished date. `ReplayBroker` is the account on one
decision date as a `Broker` (kind "replay"): the desk reaches it through the one broker door like any account."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, time
from decimal import Decimal
from typing import Any

from tools.broker.clock import SHANGHAI, Clock
from tools.broker.clock import day as to_date
from tools.broker.fees import FeeRates, fill_fees
from tools.broker.money import to_fen, yuan
from tools.broker.notes import REPLAY_FILLED
from tools.broker.orders import (
    Account,
    Check,
    Difference,
    Fill,
    Order,
    OrderRejected,
    OrderRequest,
    Position,
    Preview,
    Side,
)
from tools.broker.protocol import OrderScope
from tools.broker.rules import buy_quantity_problem
from tools.broker.store import AccountError
from tools.i18n import N_, _


@dataclass(frozen=True)
class ReplayFill:
    trade_date: str
    ts_code: str
    side: Side
    quantity: int
    price: Decimal
    value: Decimal
    fees: Decimal
    client_order_id: str = ""  # the order it filled (empty in a ledger checkpointed before it was kept)


@dataclass
class _Holding:
    quantity: int = 0
    cost_fen: int = 0
    bought_on: str = ""  # the last buy's date: those shares are not sellable that day (T+1)
    bought_today: int = 0


@dataclass
class ReplayLedger:
    starting_cash: Decimal
    rates: FeeRates
    cash_fen: int = field(init=False)
    realised_fen: int = field(default=0, init=False)
    fills: list[ReplayFill] = field(default_factory=list, init=False)
    holdings: dict[str, _Holding] = field(default_factory=dict, init=False)
    marks: list[tuple[str, Decimal]] = field(default_factory=list, init=False)  # (date, equity) at each decision

    def __post_init__(self) -> None:
        self.cash_fen = to_fen(self.starting_cash)

    def to_json(self) -> dict[str, Any]:
        """Everything but the fee rates (the paper account's settings, passed back to `from_json`), as JSON."""
        return {"starting_cash": str(self.starting_cash), "cash_fen": self.cash_fen, "realised_fen": self.realised_fen,
                "fills": [{**asdict(f), "price": str(f.price), "value": str(f.value), "fees": str(f.fees)}
                          for f in self.fills],
                "holdings": {code: asdict(held) for code, held in self.holdings.items()},
                "marks": [[d, str(equity)] for d, equity in self.marks]}

    @classmethod
    def from_json(cls, data: dict[str, Any], rates: FeeRates) -> ReplayLedger:
        """The ledger `to_json` gave, with its fee `rates`."""
        ledger = cls(Decimal(data["starting_cash"]), rates)
        ledger.cash_fen, ledger.realised_fen = int(data["cash_fen"]), int(data["realised_fen"])
        ledger.fills = [ReplayFill(f["trade_date"], f["ts_code"], f["side"], int(f["quantity"]), Decimal(f["price"]),
                                   Decimal(f["value"]), Decimal(f["fees"]), f.get("client_order_id", ""))
                        for f in data["fills"]]
        ledger.holdings = {code: _Holding(int(h["quantity"]), int(h["cost_fen"]), h["bought_on"],
                                          int(h["bought_today"])) for code, h in data["holdings"].items()}
        ledger.marks = [(d, Decimal(equity)) for d, equity in data["marks"]]
        return ledger

    def fill(self, request: OrderRequest, trade_date: str, price: Decimal) -> ReplayFill:
        """Fill `request` in full at `price` on `trade_date`; refused when cash or sellable shares fall short."""
        held = self.holdings.setdefault(request.ts_code, _Holding())
        value = (price * request.quantity).quantize(Decimal("0.01"))
        fees = fill_fees(request.ts_code, request.side, value, to_date(trade_date), self.rates).total
        if request.side == "buy":
            if to_fen(value + fees) > self.cash_fen:
                raise OrderRejected(_("the replay account has {cash} CNY, the buy needs {needed}").format(
                    cash=yuan(self.cash_fen), needed=value + fees))
            self.cash_fen -= to_fen(value + fees)
            held.cost_fen += to_fen(value + fees)
            held.bought_today = (held.bought_today if held.bought_on == trade_date else 0) + request.quantity
            held.bought_on = trade_date
            held.quantity += request.quantity
        else:
            if request.quantity > self.sellable(request.ts_code, trade_date):
                raise OrderRejected(_("only {n} shares are sellable").format(
                    n=self.sellable(request.ts_code, trade_date)))
            cost_out = held.cost_fen * request.quantity // held.quantity
            proceeds = to_fen(value - fees)
            self.cash_fen += proceeds
            self.realised_fen += proceeds - cost_out
            held.cost_fen -= cost_out
            held.quantity -= request.quantity
        done = ReplayFill(trade_date, request.ts_code, request.side, request.quantity, price, value, fees,
                          request.client_order_id)
        self.fills.append(done)
        return done

    def sellable(self, ts_code: str, trade_date: str) -> int:
        held = self.holdings.get(ts_code) or _Holding()
        return held.quantity - (held.bought_today if held.bought_on == trade_date else 0)

    def equity(self, closes: dict[str, Decimal]) -> Decimal:
        """Cash plus every position at `closes`."""
        return yuan(self.cash_fen) + sum((closes[c] * h.quantity for c, h in self.holdings.items() if h.quantity),
                                         Decimal("0.00"))

    def account(self, name: str, trade_date: str, closes: dict[str, Decimal]) -> Account:
        """The account on `trade_date`, its positions marked at `closes`."""
        positions = tuple(Position(code, None, h.quantity, self.sellable(code, trade_date), yuan(h.cost_fen),
                                   Decimal(0), closes.get(code), trade_date)
                          for code, h in self.holdings.items() if h.quantity)
        return Account(name, self.starting_cash, yuan(self.cash_fen), Decimal(0), trade_date, "replay", "unadjusted",
                       positions)


@dataclass
class ReplayBroker:
    """The replay account on one decision date as a `Broker` (kind "replay"): a simulation inside a desk replay, not
    an account anyone trades. An order fills in full at once, at that date's close, without approval; nothing is ever
    open, so there is nothing to cancel, settle, halt or resolve."""

    ledger: ReplayLedger
    name: str
    trade_date: str
    closes: dict[str, Decimal]
    kind: str = "replay"

    def clock(self) -> Clock:
        """The simulated session of the decision date, at its close."""
        closing = datetime.combine(to_date(self.trade_date), time(15, 0), SHANGHAI)
        return Clock("simulated", self.trade_date, closing, self.trade_date)

    def notes(self) -> tuple[str, ...]:
        return (_(REPLAY_FILLED),)

    def differences(self) -> list[Difference]:
        """None: the replay account is its own book."""
        return []

    def account(self) -> Account:
        return self.ledger.account(self.name, self.trade_date, self.closes)

    def positions(self) -> tuple[Position, ...]:
        return self.account().positions

    def preview(self, request: OrderRequest) -> Preview:
        """The replay account's checks (the lot rule, cash for a buy, sellable shares for a sell) at the close."""
        price = self.closes[request.ts_code]
        value = (price * request.quantity).quantize(Decimal("0.01"))
        on = to_date(self.trade_date)
        fees = fill_fees(request.ts_code, request.side, value, on, self.ledger.rates).total
        cash, held = yuan(self.ledger.cash_fen), self.ledger.sellable(request.ts_code, self.trade_date)
        if request.side == "buy":
            lot = buy_quantity_problem(request.ts_code, request.quantity, on)
            funded = value + fees <= cash
            checks = (Check(N_("lot size"), lot is None, lot or _("{n} shares").format(n=request.quantity)),
                      Check(N_("cash"), funded, _("{needed} of {cash} CNY").format(needed=value + fees, cash=cash)))
            cash_after, position_after = cash - value - fees, held + request.quantity
        else:
            checks = (Check(N_("sellable shares"), request.quantity <= held,
                            _("{n} of {held} sellable").format(n=request.quantity, held=held)),)
            cash_after, position_after = cash + value - fees, held - request.quantity
        closing = self.clock().now.isoformat()
        return Preview(request, None, self.trade_date, "close", _(REPLAY_FILLED), price, value, fees, cash_after,
                       position_after, None, None, checks, (_(REPLAY_FILLED),), closing)

    def submit(self, request: OrderRequest) -> Order:
        """Fill `request` at the date's close; a repeat of its client order id returns the first order. Raises
        OrderRejected when cash or sellable shares fall short."""
        for number, done in enumerate(self.ledger.fills, start=1):
            if request.client_order_id and done.client_order_id == request.client_order_id:
                return self._order(number, done)
        done = self.ledger.fill(request, self.trade_date, self.closes[request.ts_code])
        return self._order(len(self.ledger.fills), done)

    def cancel(self, order_id: int, by: str | None) -> Order:
        raise AccountError(_("a replay order fills at once at the close: there is nothing to cancel"))

    def orders(self, scope: OrderScope = "open") -> tuple[Order, ...]:
        """Every order the replay filled ("all"), those of the decision date ("today"); none is ever open."""
        return tuple(self._order(number, done) for number, done in enumerate(self.ledger.fills, start=1)
                     if scope == "all" or (scope == "today" and done.trade_date == self.trade_date))

    def order(self, order_id: int) -> Order | None:
        fills = self.ledger.fills
        return self._order(order_id, fills[order_id - 1]) if 0 < order_id <= len(fills) else None

    def fills(self) -> tuple[Fill, ...]:
        return tuple(self._fill(number, done) for number, done in enumerate(self.ledger.fills, start=1))

    def settle(self, now: datetime | None = None) -> list[Order]:
        """Nothing: every replay order filled when it was placed."""
        return []

    def halt(self, by: str) -> tuple[Order, ...]:
        """Nothing to cancel: no replay order is ever open."""
        return ()

    def resolve(self, order_id: int, outcome: str, price: Decimal | None, by: str) -> Order:
        raise AccountError(_("a replay order is never unknown: it filled at the close"))

    def reset(self, starting_cash: Decimal, by: str) -> None:
        raise AccountError(_("a replay account starts over with its replay"))

    def mark(self, day: str, now: datetime | None = None) -> None:
        """The equity at the decision date's closes, as the replay's curve point for `day`."""
        self.ledger.marks.append((day, self.ledger.equity(self.closes)))

    def marks(self) -> list[tuple[str, Decimal, Decimal, Decimal]]:
        return [(d, Decimal(0), Decimal(0), equity) for d, equity in self.ledger.marks]

    def realised(self) -> Decimal:
        return yuan(self.ledger.realised_fen)

    def _fill(self, number: int, done: ReplayFill) -> Fill:
        fees = fill_fees(done.ts_code, done.side, done.value, to_date(done.trade_date), self.ledger.rates)
        return Fill(number, number, done.ts_code, done.side, done.quantity, done.price, done.value,
                    fees.commission, fees.stamp_duty, fees.transfer_fee, fees.handling_fee, fees.regulator_fee,
                    done.trade_date, REPLAY_FILLED)

    def _order(self, number: int, done: ReplayFill) -> Order:
        """The order a fill made, as the ledger keeps it (its fills, not its proposal: no thread or reason)."""
        at = datetime.combine(to_date(done.trade_date), time(15, 0), SHANGHAI).isoformat()
        return Order(number, done.client_order_id, self.name, done.ts_code, None, done.side, done.quantity, "market",
                     None, done.trade_date, "close", "filled", Decimal(0), None, "replay", "", REPLAY_FILLED, at,
                     (self._fill(number, done),))
