"""The bot's side of an order to VeighNa, in a process the test SIGKILLs between the send and its acknowledgement:
it books and sends one order (client order id `kill-1`) and waits for the server's answer, which the test's
server holds back."""

from __future__ import annotations

import sys
from decimal import Decimal

from testkit.paper import CONFIG
from tools.broker.accounts import BrokerEnv
from tools.broker.orders import OrderRequest
from tools.broker.vnpy import VnpyBroker
from tools.broker.vnpy_wire import Wire
from tools.data.local import SampleProvider
from tools.storage.db import make_engine

REQUEST = OrderRequest("kill-1", "600519.SH", "buy", 100, "limit", Decimal("1700"), approved_by="UTRADER")


def main(url: str, req: str, pub: str) -> None:
    engine = make_engine(url)
    wire = Wire(req, pub, 120)
    VnpyBroker(BrokerEnv(engine, SampleProvider(), CONFIG, None), "live", wire, "XTP").submit(REQUEST)


if __name__ == "__main__":
    main(*sys.argv[1:4])
