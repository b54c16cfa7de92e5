"""The VeighNa broker against a real VeighNa RPC server in another process (testkit/vnpy.py: a MainEngine served
by vnpy_rpcservice, with a test gateway), over loopback: an approved order arrives once with the right fields, fills
(partly, then wholly) and rejections come back to the book and the audit trail, a process killed between the send
and its acknowledgement does not send again, a server that forgot the order makes it "unknown", `trading off`
cancels open orders at the gateway, and a position QuantDesk did not make is reported. The server speaks Chinese
enums and this process English ones (VeighNa pickles them by value): every test crosses the locales."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from decimal import Decimal as D
from pathlib import Path

import pytest
from sqlalchemy import Engine

from graphs.context import WorkflowContext
from testkit.graph_thread import GraphThread
from testkit.paper import CONFIG, interrupt_value, order_events
from testkit.vnpy import ROOT, VnpyServer, free_address, vnpy_server
from testkit.wait import wait_until
from tools.audit.replay import differences
from tools.broker import news
from tools.broker.accounts import Accounts, BrokerEnv
from tools.broker.orders import Order, OrderRejected, OrderRequest
from tools.broker.store import AccountError, set_trading
from tools.broker.vnpy import VnpyBroker, open_broker
from tools.broker.vnpy_wire import RemoteAddressRefused, Wire
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox
from tools.settings import Settings
from tools.storage.artifacts import ArtifactStore

ACCOUNT, TRADER = "live", "UTRADER"


@pytest.fixture(scope="module")
def provider() -> SampleProvider:
    return SampleProvider()


def _broker(engine: Engine, provider: SampleProvider, req: str, pub: str, *, timeout: float = 2.0,
            dry_run: bool = False) -> VnpyBroker:
    wire = Wire(req, pub, timeout)
    return VnpyBroker(BrokerEnv(engine, provider, CONFIG, None), ACCOUNT, wire, "XTP", dry_run=dry_run)


def _buy(ref: str, quantity: int = 100, price: str = "1700") -> OrderRequest:
    return OrderRequest(ref, "600519.SH", "buy", quantity, "limit", D(price), approved_by=TRADER)


def _settled(broker: VnpyBroker, order_id: int, status: str) -> Order:
    def done() -> Order | None:
        broker.settle()
        order = broker.order(order_id)
        return order if order is not None and order.status == status else None
    return wait_until(done, f"order {order_id} to be {status}", 30, seen=lambda: broker.order(order_id))


def test_an_order_arrives_once_with_the_right_fields_and_its_fills_come_back(sqlite_engine: Engine, tmp_path: Path,
                                                                            provider: SampleProvider) -> None:
    with vnpy_server(tmp_path, "zh_CN") as server:
        broker = _broker(sqlite_engine, provider, server.req, server.pub)
        preview = broker.preview(_buy("o1"))
        assert preview.passed and preview.checks[0].detail == "sent to XTP"
        order = broker.submit(_buy("o1"))
        assert (order.status, order.note) == ("open", "sent to XTP")
        assert broker.submit(_buy("o1")).id == order.id  # a repeat returns the booked order and sends nothing
        (sent,) = server.received()
        assert {k: sent[k] for k in ("symbol", "exchange", "direction", "type", "offset", "volume", "price",
                                     "reference")} == {
            "symbol": "600519", "exchange": "SSE", "direction": "LONG", "type": "LIMIT", "offset": "NONE",
            "volume": 100.0, "price": 1700.0, "reference": "o1"}
        server.call("fill", sent["orderid"], 40.0, 1700.0)
        wait_until(lambda: broker.settle() and broker.order(order.id).note == "sent to XTP; filled 40 of 100",  # type: ignore[union-attr]
                   "the partial fill in the book", 30, seen=lambda: broker.order(order.id))
        server.call("fill", sent["orderid"], 60.0, 1700.0)
        done = _settled(broker, order.id, "filled")
        assert done.note == "filled 100 @ 1700.00 by XTP"
        assert [(f.quantity, f.price) for f in done.fills] == [(40, D("1700.00")), (60, D("1700.00"))]
        account = broker.account()
        assert (account.cash, account.starting_cash, account.clock) == (D("830000.00"), D("1000000.00"), "live")
        assert [(p.ts_code, p.quantity, p.cost) for p in account.positions] == [("600519.SH", 100, D("170000.00"))]
        assert len(server.received()) == 1
    events = [e for e, _by in order_events(sqlite_engine, ACCOUNT)]
    assert events == ["account opened", "submitted", "sent", "fill", "fill", "filled"]
    assert list(differences(sqlite_engine, ACCOUNT)) == []  # `audit verify`'s replay agrees with the book
    assert "vnpy.trader.utility" not in sys.modules  # which would make a .vntrader folder in the cwd or the home


def test_a_rejection_shows_the_gateways_reason(sqlite_engine: Engine, tmp_path: Path,
                                               provider: SampleProvider) -> None:
    with vnpy_server(tmp_path, "zh_CN") as server:
        broker = _broker(sqlite_engine, provider, server.req, server.pub)
        order = broker.submit(_buy("r1"))
        (sent,) = server.received()
        server.call("reject", sent["orderid"], "price outside the broker's band")
        rejected = _settled(broker, order.id, "rejected")
        assert rejected.note == f"rejected by XTP: order {sent['orderid']} rejected: price outside the broker's band"
        assert "rejected" in rejected.summary()


def test_a_market_order_the_gateway_lacks_is_rejected_with_its_reason_and_never_placed(
        sqlite_engine: Engine, tmp_path: Path, provider: SampleProvider) -> None:
    """A gateway without market orders refuses one as VeighNa's do: a log line and no order id. The order ends
    rejected with that line at once (not "sent", not later "unknown"), and nothing reaches the gateway's book."""
    with vnpy_server(tmp_path, "zh_CN") as server:
        server.call("market_orders", False)
        broker = _broker(sqlite_engine, provider, server.req, server.pub)
        order = broker.submit(OrderRequest("m1", "600519.SH", "buy", 100, "market", None, approved_by=TRADER))
        assert order.status == "rejected"
        assert order.note == ("not taken by XTP: 委托失败，不支持的委托类型市价 (VeighNa gave no order id: nothing was "
                              "placed)")
        assert server.received() == [] and broker.settle() == [] and broker.order(order.id).status == "rejected"  # type: ignore[union-attr]
        limit = broker.submit(_buy("m2"))  # the gateway's limit orders still go through
        assert limit.status == "open" and len(server.received()) == 1
    assert [e for e, _by in order_events(sqlite_engine, ACCOUNT)] == ["account opened", "submitted", "rejected",
                                                                      "submitted", "sent"]


def test_a_process_killed_between_send_and_acknowledgement_does_not_send_again(
        sqlite_url: str, sqlite_engine: Engine, tmp_path: Path, provider: SampleProvider) -> None:
    with vnpy_server(tmp_path, "zh_CN") as server:
        server.call("hold", True)
        log = tmp_path / "bot.log"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
        with log.open("wb") as out:
            bot = subprocess.Popen([sys.executable, "-m", "testkit.children.vnpy_submit", sqlite_url, server.req,
                                    server.pub], cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_until(server.received, "the order to reach the gateway", 60,
                       gone=lambda: None if bot.poll() is None else log.read_text())
            os.kill(bot.pid, signal.SIGKILL)
            assert bot.wait(timeout=30) == -signal.SIGKILL
        finally:
            if bot.poll() is None:
                bot.kill()
        server.call("hold", False)  # the gateway acknowledges the order now, to nobody
        broker = _broker(sqlite_engine, provider, server.req, server.pub)  # the bot restarted
        (booked,) = broker.orders("all")
        assert (booked.client_order_id, booked.note) == ("kill-1", "sending to XTP")
        again = broker.submit(OrderRequest("kill-1", "600519.SH", "buy", 100, "limit", D("1700"),
                                           approved_by=TRADER))
        assert again.id == booked.id
        wait_until(lambda: broker.settle() or broker.order(booked.id).note == "sent to XTP",  # type: ignore[union-attr]
                   "the restarted bot to find the order by its reference", 30)
        assert [r["reference"] for r in server.received()] == ["kill-1"]


def test_a_server_that_restarted_and_forgot_the_order_makes_it_unknown(sqlite_engine: Engine, tmp_path: Path,
                                                                        provider: SampleProvider) -> None:
    server = VnpyServer(tmp_path, "zh_CN")
    server.start()
    try:
        broker = _broker(sqlite_engine, provider, server.req, server.pub, timeout=1.0)
        order = broker.submit(_buy("u1"))
        assert order.note == "sent to XTP"
        server.kill()
        server.start()  # same addresses, no memory of the order
        unknown = _settled(broker, order.id, "unknown")
        assert unknown.note.startswith("XTP does not know this order (reference u1)")
        assert f"`resolve {order.id} filled PRICE|cancelled|unsent`" in unknown.summary()
        assert server.received() == []  # nothing sent again
        with pytest.raises(AccountError, match="say the price it filled at"):
            broker.resolve(order.id, "filled", None, TRADER)
        marked = broker.resolve(order.id, "filled", D("1699.50"), TRADER)  # the trader checked at the broker
        assert (marked.status, marked.note) == ("filled", "marked filled by UTRADER after checking at the broker")
        assert [(f.quantity, f.price) for f in marked.fills] == [(100, D("1699.50"))]
        with pytest.raises(AccountError, match="is not unknown"):
            broker.resolve(order.id, "cancelled", None, TRADER)
    finally:
        server.kill()
    assert order_events(sqlite_engine, ACCOUNT)[-2:] == [("unknown", None), ("marked filled", TRADER)]
    assert list(differences(sqlite_engine, ACCOUNT)) == []


def test_trading_off_cancels_open_orders_at_the_gateway(sqlite_engine: Engine, tmp_path: Path,
                                                        provider: SampleProvider) -> None:
    with vnpy_server(tmp_path, "zh_CN") as server:
        broker = _broker(sqlite_engine, provider, server.req, server.pub)
        waiting = broker.submit(_buy("k1"))
        filling = broker.submit(_buy("k2"))
        server.call("fill", server.received()[1]["orderid"], 100.0, 1690.0)  # filled at the gateway, not yet booked
        set_trading(sqlite_engine, False, TRADER, "test")
        ended = Accounts(sqlite_engine, lambda name, by: broker).halt(TRADER)
        assert {(o.id, o.status) for o in ended} == {(waiting.id, "cancelled"), (filling.id, "filled")}
        assert broker.orders("open") == ()


def test_a_position_quantdesk_did_not_make_is_reported(sqlite_engine: Engine, tmp_path: Path,
                                                       provider: SampleProvider) -> None:
    with vnpy_server(tmp_path, "en") as server:  # both ends in English here
        broker = _broker(sqlite_engine, provider, server.req, server.pub)
        server.call("set_position", "000001", "SZSE", 500.0, 500.0, 12.5)
        wait_until(lambda: any("000001.SZ" in n for n in broker.notes()), "the difference in the notes", 30)
        assert "reconciliation: the broker holds 500 of 000001.SZ, QuantDesk's fills make 0" in broker.notes()
        assert [(p.ts_code, p.quantity, p.sellable, p.cost) for p in broker.positions()] == [
            ("000001.SZ", 500, 500, D("6250.00"))]


def test_a_dry_run_sends_nothing(sqlite_engine: Engine, tmp_path: Path, provider: SampleProvider) -> None:
    with vnpy_server(tmp_path, "zh_CN") as server:
        broker = _broker(sqlite_engine, provider, server.req, server.pub, dry_run=True)
        order = broker.submit(_buy("d1"))
        assert (order.status, order.note) == ("cancelled", "dry run: not sent to XTP (QUANTDESK_VNPY_DRY_RUN)")
        assert server.received() == []


def test_a_server_that_does_not_answer_refuses_the_order_with_one_clear_line(sqlite_engine: Engine,
                                                                              provider: SampleProvider) -> None:
    address = free_address()
    broker = _broker(sqlite_engine, provider, address, free_address(), timeout=0.5)
    line = f"the VeighNa server at {address} does not answer"
    preview = broker.preview(_buy("s1"))
    assert (preview.checks[0].passed, preview.checks[0].detail) == (False, line)
    with pytest.raises(OrderRejected, match=line):
        broker.submit(_buy("s1"))
    assert broker.orders("all") == ()  # nothing booked: nothing can be sent when the server comes back
    with pytest.raises(AccountError, match=line):  # `account` and the Home say so; no figures are guessed
        broker.account()
    assert line in broker.notes()


def test_a_remote_address_needs_leave() -> None:
    with pytest.raises(RemoteAddressRefused):
        Wire("tcp://10.20.30.40:2014", "tcp://127.0.0.1:4102", 1)
    Wire("tcp://10.20.30.40:2014", "tcp://10.20.30.40:4102", 1, allow_remote=True)


def test_an_order_card_approved_in_the_chat_goes_to_the_gateway(db_url: str, engine: Engine, sandbox: Sandbox,
                                                               tmp_path: Path, provider: SampleProvider) -> None:
    with vnpy_server(tmp_path, "zh_CN") as server:
        wire = Wire(server.req, server.pub, 2.0)
        env = BrokerEnv(engine, provider, CONFIG, None)
        ctx = WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                              paper=CONFIG, traders=frozenset({TRADER}), admins=frozenset({"UASK"}),
                              broker=lambda name, by: VnpyBroker(env, name, wire, "XTP", opened_by=by))
        thread = GraphThread(db_url, ctx, requester="UASK")
        out = thread.say(f"order 600519.SH buy 100 limit=1700 account={ACCOUNT} results beat expectations")
        card = interrupt_value(out)
        assert "PASS broker: sent to XTP" in card["description"]
        done = thread.decide(out, {"type": "approve"}, user=TRADER)["result"]
        assert done["status"] == "open" and "sent to XTP" in done["message"]
        (sent,) = server.received()
        server.call("fill", sent["orderid"], 100.0, 1700.0)
        desk = Accounts(engine, ctx.broker)
        changed = wait_until(lambda: [o for o in desk.settle() if o.status == "filled"], "the fill to come back", 30)
        (filled,) = changed  # what the settle job posts into the card's thread
        assert filled.thread_id == thread.thread
        assert "filled 100 @ 1700.00 by XTP (trade 1)" in filled.summary()
        assert len(server.received()) == 1


def test_the_registered_broker_reports_the_gateways_order_and_trade_events(sqlite_engine: Engine, tmp_path: Path,
                                                                           provider: SampleProvider) -> None:
    """What the background service listens to (tools/broker/news.py): the gateway's acknowledgement and fill of an
    order, as the server publishes them, through the connection the account registry opens."""
    heard: list[int] = []
    stop = news.listen(lambda: heard.append(1))
    try:
        with vnpy_server(tmp_path, "zh_CN") as server:
            settings = Settings(_env_file=None, QUANTDESK_VNPY_REQ_ADDRESS=server.req,
                                QUANTDESK_VNPY_SUB_ADDRESS=server.pub)
            broker = open_broker(BrokerEnv(sqlite_engine, provider, CONFIG, settings), ACCOUNT, None)
            order = broker.submit(_buy("n1"))
            wait_until(lambda: heard, "the gateway's acknowledgement", 30)
            (sent,) = server.received()
            before = len(heard)
            server.call("fill", sent["orderid"], 100.0, 1700.0)
            wait_until(lambda: len(heard) > before, "the gateway's fill", 30)
            assert _settled(broker, order.id, "filled").note == "filled 100 @ 1700.00 by XTP"
    finally:
        stop()
