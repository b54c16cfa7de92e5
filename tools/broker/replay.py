"""The replay account: a paper account in memory that lives for one replay of the decision desk over past dates.

Only a replay trades here, and its orders need no approval: each fills in full at the decision date's close, with
the paper account's costs (`tools.broker.fees`: commission and its minimum, stamp duty on sells, transfer fee), in
integer fen. Positions bought on a date are sellable from the next trading day (T+1). `account()` gives the account
as it stands on a day, marked at that day's closes, for the desk's fusion (cash, positions, drawdown) and its
trader. `to_json` and `from_json` carry the ledger through a checkpoint exactly (integer fen, decimal text), so a
replay resumed after a crash goes on from the ledger of its last finished date."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

from tools.broker.clock import day as to_date
from tools.broker.fees import FeeRates, fill_fees
from tools.broker.money import to_fen, yuan
from tools.broker.orders import Account, OrderRejected, OrderRequest, Position
from tools.i18n import _


@dataclass(frozen=True)
class ReplayFill:
    trade_date: str
    ts_code: str
    side: str
    quantity: int
    price: Decimal
    value: Decimal
    fees: Decimal


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
                                   Decimal(f["value"]), Decimal(f["fees"])) for f in data["fills"]]
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
        done = ReplayFill(trade_date, request.ts_code, request.side, request.quantity, price, value, fees)
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


@dataclass(frozen=True)
class ReplayBroker:
    """The ledger seen on one decision date, as the desk's fusion and order steps use a broker."""

    ledger: ReplayLedger
    name: str
    trade_date: str
    closes: dict[str, Decimal]

    def account(self) -> Account:
        return self.ledger.account(self.name, self.trade_date, self.closes)

    def realised(self) -> Decimal:
        return yuan(self.ledger.realised_fen)

    def marks(self) -> list[tuple[str, Decimal, Decimal, Decimal]]:
        return [(d, Decimal(0), Decimal(0), equity) for d, equity in self.ledger.marks]

    def submit(self, request: OrderRequest) -> ReplayFill:
        return self.ledger.fill(request, self.trade_date, self.closes[request.ts_code])
