"""A VeighNa trader for the tests: a real MainEngine, served by vnpy_rpcservice's RPC engine, with a small gateway
written for the tests (`DeskGateway`): it accepts and acknowledges orders, fills or rejects them on command, and
reports positions and cash. The test commands it over a second VeighNa RpcServer (the control address): what it
received, fill, reject, hold sends, set cash and positions, refuse market orders.

Run as `python -m testkit.children.vnpy_server REP PUB CONTROL CONTROL_PUB` in a folder of its own: VeighNa's
MainEngine makes its `.vntrader` folder there (the folder exists, so VeighNa uses it and never the home) and
changes into it."""

from __future__ import annotations

import sys
import threading
from copy import copy
from datetime import datetime
from typing import Any

from vnpy.event import EventEngine
from vnpy.rpc import RpcServer
from vnpy.trader.constant import Direction, Exchange, OrderType, Status
from vnpy.trader.engine import MainEngine
from vnpy.trader.gateway import BaseGateway
from vnpy.trader.object import (
    AccountData,
    CancelRequest,
    HistoryRequest,
    OrderData,
    OrderRequest,
    PositionData,
    SubscribeRequest,
    TradeData,
)
from vnpy_rpcservice.rpc_service.engine import RpcEngine


class DeskGateway(BaseGateway):
    """Accepts every order at once (status NOTTRADED), fills and rejects on command."""

    default_name = "XTP"
    default_setting: dict[str, Any] = {}
    exchanges = [Exchange.SSE, Exchange.SZSE, Exchange.BSE]

    def __init__(self, event_engine: EventEngine, gateway_name: str) -> None:
        super().__init__(event_engine, gateway_name)
        self.orders: dict[str, OrderData] = {}
        self.received: list[dict[str, Any]] = []
        self.trades = 0
        self.balance = 1_000_000.0
        self.held: dict[tuple[str, Exchange], list[float]] = {}  # (symbol, exchange) -> [volume, yesterday's, cost]
        self.release = threading.Event()
        self.release.set()
        self.market_orders = True  # False: refused as gateways without them refuse (a log line, no order id)

    def connect(self, setting: dict) -> None:
        self.push()

    def close(self) -> None:
        self.release.set()

    def subscribe(self, req: SubscribeRequest) -> None:
        return None

    def query_account(self) -> None:
        return None

    def query_position(self) -> None:
        return None

    def query_history(self, req: HistoryRequest) -> list:
        return []

    def send_order(self, req: OrderRequest) -> str:
        if req.type == OrderType.MARKET and not self.market_orders:
            self.write_log(f"委托失败，不支持的委托类型{req.type.value}")
            return ""
        orderid = str(len(self.received) + 1)
        self.received.append({"orderid": orderid, "symbol": req.symbol, "exchange": req.exchange.name,
                              "direction": req.direction.name, "type": req.type.name, "offset": req.offset.name,
                              "volume": req.volume, "price": req.price, "reference": req.reference})
        self.release.wait()  # held: the order has arrived, its acknowledgement waits
        order = req.create_order_data(orderid, self.gateway_name)
        order.status, order.datetime = Status.NOTTRADED, datetime.now()
        self.orders[orderid] = order
        self.on_order(copy(order))
        return order.vt_orderid

    def cancel_order(self, req: CancelRequest) -> None:
        order = self.orders.get(req.orderid)
        if order is not None and order.is_active():
            order.status = Status.CANCELLED
            self.on_order(copy(order))

    def fill(self, orderid: str, volume: float, price: float) -> None:
        order = self.orders[orderid]
        self.trades += 1
        order.traded += volume
        order.status = Status.ALLTRADED if order.traded >= order.volume else Status.PARTTRADED
        self.on_trade(TradeData(symbol=order.symbol, exchange=order.exchange, orderid=orderid,
                                tradeid=str(self.trades), direction=order.direction, offset=order.offset, price=price,
                                volume=volume, datetime=datetime.now(), gateway_name=self.gateway_name))
        self.on_order(copy(order))
        sign = 1 if order.direction == Direction.LONG else -1
        held = self.held.setdefault((order.symbol, order.exchange), [0.0, 0.0, 0.0])
        held[2] += sign * volume * price if sign > 0 else -held[2] * volume / held[0]
        held[0] += sign * volume
        self.balance -= sign * volume * price
        self.push()

    def reject(self, orderid: str, reason: str) -> None:
        order = self.orders[orderid]
        order.status = Status.REJECTED
        self.write_log(f"order {orderid} rejected: {reason}")
        self.on_order(copy(order))

    def push(self) -> None:
        self.on_account(AccountData(accountid="desk", balance=self.balance, frozen=0, gateway_name=self.gateway_name))
        for (symbol, exchange), (volume, yesterday, cost) in self.held.items():
            self.on_position(PositionData(symbol=symbol, exchange=exchange, direction=Direction.NET, volume=volume,
                                          yd_volume=yesterday, price=cost / volume if volume else 0.0,
                                          gateway_name=self.gateway_name))


def main(rep: str, pub: str, control: str, control_pub: str) -> None:
    engine = MainEngine(EventEngine())
    gateway: DeskGateway = engine.add_gateway(DeskGateway)  # type: ignore[assignment]
    engine.connect({}, gateway.gateway_name)
    rpc: RpcEngine = engine.add_engine(RpcEngine)
    if not rpc.start(rep, pub):
        raise SystemExit("the RPC service did not start")
    commands = RpcServer()

    def received() -> list[dict[str, Any]]:
        return list(gateway.received)

    def hold(on: bool) -> None:
        (gateway.release.clear if on else gateway.release.set)()

    def set_position(symbol: str, exchange: str, volume: float, yesterday: float, price: float) -> None:
        gateway.held[(symbol, Exchange[exchange])] = [volume, yesterday, volume * price]
        gateway.push()

    def market_orders(on: bool) -> None:
        gateway.market_orders = on

    def set_cash(balance: float) -> None:
        gateway.balance = balance
        gateway.push()

    for function in (received, hold, gateway.fill, gateway.reject, set_position, set_cash, market_orders):
        commands.register(function)
    commands.start(control, control_pub)
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main(*sys.argv[1:5])
