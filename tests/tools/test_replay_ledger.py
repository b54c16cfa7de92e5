"""The replay account's JSON round trip (issue 14): a ledger after buys and sells, taken through JSON text as a
checkpoint would, comes back equal, and then trades, refuses and marks exactly as the original does."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from tools.broker.fees import DEFAULT_RATES
from tools.broker.orders import OrderRejected, OrderRequest
from tools.broker.replay import ReplayLedger

CODE, OTHER = "600519.SH", "000001.SZ"


def _order(side: str, quantity: int, code: str = CODE) -> OrderRequest:
    return OrderRequest(f"o-{side}-{quantity}-{code}", code, side, quantity)  # type: ignore[arg-type]


def _traded() -> ReplayLedger:
    """Two stocks bought, one of them bought again and partly sold on the same day (T+1 bookkeeping pending)."""
    ledger = ReplayLedger(Decimal("1000000.00"), DEFAULT_RATES)
    ledger.fill(_order("buy", 200), "20200803", Decimal("1668.00"))
    ledger.fill(_order("buy", 1000, OTHER), "20200803", Decimal("14.37"))
    ledger.marks.append(("20200803", ledger.equity({CODE: Decimal("1668.00"), OTHER: Decimal("14.37")})))
    ledger.fill(_order("buy", 100), "20200804", Decimal("1669.99"))
    ledger.fill(_order("sell", 150), "20200804", Decimal("1669.99"))  # 200 sellable: the 100 bought today are not
    ledger.marks.append(("20200804", ledger.equity({CODE: Decimal("1669.99"), OTHER: Decimal("14.21")})))
    return ledger


def _after(ledger: ReplayLedger) -> list[object]:
    """What the ledger does next: a refused sell on the same day, sells the next day, an account and a mark."""
    closes = {CODE: Decimal("1668.00"), OTHER: Decimal("14.50")}
    with pytest.raises(OrderRejected, match="only 50 shares are sellable"):
        ledger.fill(_order("sell", 100), "20200804", Decimal("1669.99"))
    ledger.fill(_order("sell", 150), "20200805", closes[CODE])
    ledger.fill(_order("sell", 400, OTHER), "20200805", closes[OTHER])
    return [ledger.fills, ledger.cash_fen, ledger.realised_fen, ledger.equity(closes),
            ledger.account("replay-x", "20200805", closes), ledger.sellable(CODE, "20200805")]


def test_a_traded_ledger_round_trips_through_json_text_to_an_equal_ledger() -> None:
    ledger = _traded()
    data = ledger.to_json()
    back = ReplayLedger.from_json(json.loads(json.dumps(data)), DEFAULT_RATES)
    assert back == ledger
    assert back.to_json() == data
    assert isinstance(data["cash_fen"], int) and isinstance(data["realised_fen"], int)
    assert data["holdings"][CODE] == {"quantity": 150, "cost_fen": data["holdings"][CODE]["cost_fen"],
                                      "bought_on": "20200804", "bought_today": 100}
    assert [f["price"] for f in data["fills"]] == ["1668.00", "14.37", "1669.99", "1669.99"]
    assert back.marks == ledger.marks and all(isinstance(e, Decimal) for _, e in back.marks)


def test_a_round_tripped_ledger_behaves_as_the_original_afterwards() -> None:
    ledger = _traded()
    back = ReplayLedger.from_json(json.loads(json.dumps(ledger.to_json())), DEFAULT_RATES)
    assert _after(back) == _after(ledger)
    assert back == ledger
