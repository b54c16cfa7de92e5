"""Live orders through VeighNa over the loopback RPC: a real vnpy_rpcservice server around a real MainEngine with
the tests' gateway (testkit/vnpy.py), in another process. For each of 50 orders: approve → the gateway holds the
order (the approved order checked, written to the book, sent, acknowledged: `submit`), then the gateway's fill →
the book says filled (what the settle pass posts on the card). Median and p99 of each; goal p99 ≤ 200 ms each.
One untimed order first opens the connection and reads the sample's quote, as a running bot has done.

`python -m bench vnpy_orders`; `main(quick=True)`: QUICK_ORDERS orders (tests call it)."""

from __future__ import annotations

import statistics
import tempfile
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

from bench import goals
from testkit.vnpy import vnpy_server
from tools.broker.accounts import BrokerEnv
from tools.broker.checks import RiskLimits
from tools.broker.config import TradingConfig
from tools.broker.fees import DEFAULT_RATES
from tools.broker.orders import OrderRequest
from tools.broker.vnpy import VnpyBroker
from tools.broker.vnpy_wire import Wire
from tools.data.local import SampleProvider
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

ORDERS, QUICK_ORDERS = 50, 5
GOAL_MS = 200.0
CONFIG = TradingConfig(DEFAULT_RATES, RiskLimits(Decimal("1e12"), Decimal(1000), Decimal(1)), Decimal(0), "open", 7,
                       timedelta(minutes=30))


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def main(quick: bool = False) -> None:
    orders = QUICK_ORDERS if quick else ORDERS
    with tempfile.TemporaryDirectory() as tmp, vnpy_server(Path(tmp), "zh_CN") as server:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'bench.db'}")
        upgrade(engine)
        server.call("set_cash", 1e12)
        broker = VnpyBroker(BrokerEnv(engine, SampleProvider(), CONFIG, None), "bench",
                            Wire(server.req, server.pub, 5.0), "XTP")
        broker.submit(OrderRequest("warm-up", "600519.SH", "buy", 100, "limit", Decimal("1700")))  # untimed: opens
        sent, filled = [], []  # the connection and reads the sample's quote once, as a running bot has
        for i in range(orders):
            start = time.perf_counter()
            order = broker.submit(OrderRequest(f"bench-{i}", "600519.SH", "buy", 100, "limit", Decimal("1700")))
            sent.append(time.perf_counter() - start)
            orderid = server.received()[-1]["orderid"]
            start = time.perf_counter()
            server.call("fill", orderid, 100.0, 1700.0)
            while broker.order(order.id).status != "filled":  # type: ignore[union-attr]
                broker.settle()
            filled.append(time.perf_counter() - start)
        if len(server.received()) != orders + 1:
            raise RuntimeError(f"the gateway received {len(server.received())} orders, not {orders + 1}")
        engine.dispose()
    for label, values in (("approve → held by the gateway", sent), ("gateway fill → the book filled", filled)):
        p99 = _p99(values) * 1000
        verdict = goals.judge(f"{label}: p99 ≤ {GOAL_MS:.0f} ms", p99 <= GOAL_MS, quick)
        print(f"  {label}: median {statistics.median(values) * 1000:.1f} ms, p99 {p99:.1f} ms over {orders} orders "
              f"(goal p99 ≤ {GOAL_MS:.0f} ms: {verdict})")


if __name__ == "__main__":
    main()
