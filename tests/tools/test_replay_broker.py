"""The replay account as a `Broker` (issue 40): the desk reaches it through the one broker door like any account.
An order fills in full at the decision date's close and comes back as a filled `Order` whose fill carries the paper
account's fees; a repeat of its client order id returns the same order; nothing is ever open; what a live account
does that a replay cannot (cancel, resolve, reset) is refused with a reason."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tools.broker.clock import day
from tools.broker.fees import DEFAULT_RATES, fill_fees
from tools.broker.orders import OrderRejected, OrderRequest
from tools.broker.protocol import Broker
from tools.broker.replay import ReplayBroker, ReplayLedger
from tools.broker.store import AccountError

CODE, DATE, CLOSE = "600519.SH", "20200803", Decimal("1668.00")


def _broker(cash: str = "1000000.00") -> ReplayBroker:
    return ReplayBroker(ReplayLedger(Decimal(cash), DEFAULT_RATES), "replay-abc", DATE, {CODE: CLOSE})


def test_an_order_fills_at_the_close_as_a_filled_order_with_the_paper_fees() -> None:
    broker: Broker = _broker()
    order = broker.submit(OrderRequest("r1", CODE, "buy", 200, reason="desk"))
    (fill,) = order.fills
    fees = fill_fees(CODE, "buy", Decimal("333600.00"), day(DATE), DEFAULT_RATES)
    assert (order.status, order.session_date, order.fill_at, order.approved_by) == ("filled", DATE, "close", "replay")
    assert (fill.quantity, fill.price, fill.value, fill.fees) == (200, CLOSE, Decimal("333600.00"), fees.total)
    assert broker.account().cash == Decimal("1000000.00") - Decimal("333600.00") - fees.total
    assert broker.submit(OrderRequest("r1", CODE, "buy", 200)) == order  # a repeat fills nothing more
    assert broker.fills() == order.fills and broker.order(order.id) == order and broker.order(2) is None
    assert broker.orders("open") == () and broker.orders("all") == (order,) == broker.orders("today")
    assert broker.settle() == [] and broker.halt("UTRADER") == () and broker.differences() == []
    assert broker.kind == "replay" and broker.clock().simulated and broker.clock().today == DATE


def test_the_preview_checks_the_lot_cash_and_sellable_shares_and_submit_refuses_the_same() -> None:
    broker = _broker("100000.00")
    assert broker.preview(OrderRequest("p1", CODE, "buy", 50)).failed[0].name == "lot size"
    short = broker.preview(OrderRequest("p2", CODE, "buy", 100))
    assert not short.passed and short.failed[0].name == "cash"
    with pytest.raises(OrderRejected, match="the replay account has"):
        broker.submit(OrderRequest("p2", CODE, "buy", 100))
    assert broker.preview(OrderRequest("p3", CODE, "sell", 100)).failed[0].name == "sellable shares"
    assert broker.orders("all") == ()


def test_what_a_replay_cannot_do_is_refused_with_a_reason() -> None:
    broker = _broker()
    order = broker.submit(OrderRequest("c1", CODE, "buy", 100))
    with pytest.raises(AccountError, match="nothing to cancel"):
        broker.cancel(order.id, "UTRADER")
    with pytest.raises(AccountError, match="never unknown"):
        broker.resolve(order.id, "filled", CLOSE, "UTRADER")
    with pytest.raises(AccountError, match="starts over with its replay"):
        broker.reset(Decimal("1"), "UTRADER")


def test_a_mark_is_the_equity_at_the_dates_closes() -> None:
    broker = _broker()
    broker.submit(OrderRequest("m1", CODE, "buy", 100))
    broker.mark(DATE)
    ((date, _cash, _value, equity),) = broker.marks()
    assert date == DATE and equity == broker.account().cash + CLOSE * 100
