"""The VeighNa broker: an account whose orders go to a running VeighNa trader (vn.py 4.x) through its RPC service,
to the gateway it names (XTP, TORA, QMT, CTP …). QuantDesk keeps its own book of the account's orders and fills
(tools/broker/book.py); the server's word is the truth for status, fills, positions and cash.

Exactly once: an order's client order id travels as VeighNa's `reference`, and the order is written to the book
(committed) before it is sent. A send that times out, or a process that died between the write and the server's
answer, is looked up afterwards by that reference in the server's orders (VeighNa has no lookup by reference, and
keeps orders in memory only): found, the book carries on from what the server says; not found, the order is
"unknown" on its card and is never sent again by QuantDesk."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tools.broker import news
from tools.broker.accounts import BrokerEnv
from tools.broker.book import book_orders, fill_view, order_view, resolve_unknown
from tools.broker.clock import SHANGHAI, Clock, clock_for, session_for
from tools.broker.fees import fill_fees
from tools.broker.mandate import load_mandate
from tools.broker.market import Prices
from tools.broker.money import to_fen, yuan
from tools.broker.notes import (
    DRY_RUN,
    GATEWAY_CANCELLED,
    GATEWAY_FILLED,
    GATEWAY_REJECTED,
    NOT_TAKEN,
    PART_FILLED,
    SENDING,
    SENT,
    TRADED,
    UNKNOWN,
)
from tools.broker.orders import Account, Check, Difference, Fill, Order, OrderRejected, OrderRequest, Position, Preview
from tools.broker.pretrade import AccountFacts, judge
from tools.broker.protocol import OrderScope
from tools.broker.records import PaperFill, PaperMark, PaperOrder
from tools.broker.store import AccountError, ensure_account, log_event, record_event, trading_enabled, write_lock
from tools.broker.vnpy_wire import Silent, Wire, ts_code, vnpy_symbol
from tools.i18n import N_, _

log = logging.getLogger(__name__)

BROKER_CHECK = N_("broker")  # the pre-trade check that the account's server answers
SILENT = N_("the VeighNa server at {address} does not answer")
LIVE_AT = N_("{gateway} through VeighNa")
FILLS_AT_BROKER = N_("sent to {gateway} at approval; fills as the market trades it")
LIVE_NOTE = N_("positions and cash are the VeighNa server's ({gateway}); fees are estimated at QuantDesk's rates")
NO_DAILY_LOSS = N_("the daily loss limit is judged from the broker's equity now (no start-of-day mark yet)")
ORDER_EVENTS = ("eOrder.", "eTrade.")  # VeighNa's EVENT_ORDER and EVENT_TRADE (vnpy.trader.event)
_WIRES: dict[tuple[str, str], Wire] = {}
_WIRES_LOCK = threading.Lock()
_SENDING: set[str] = set()  # references this process is sending now (not "unknown" while their answer is awaited)


def _wire(settings: Any) -> Wire:
    """The process's one connection to the configured server."""
    key = (settings.vnpy_req_address, settings.vnpy_sub_address)
    with _WIRES_LOCK:
        if key not in _WIRES:
            _WIRES[key] = Wire(*key, settings.vnpy_timeout, _order_news, allow_remote=settings.vnpy_allow_remote)
        return _WIRES[key]


def _order_news(event: Any) -> None:
    """An order or trade event from the server (any client's: the settle pass sorts out what is the desk's)."""
    if str(getattr(event, "type", "")).startswith(ORDER_EVENTS):
        news.heard()


def close_wires() -> None:
    """Close the process's connections (a process that stops serving, a test whose server is gone)."""
    with _WIRES_LOCK:
        wires = list(_WIRES.values())
        _WIRES.clear()
    for wire in wires:
        wire.close()


def open_broker(env: BrokerEnv, account: str, opened_by: str | None) -> VnpyBroker:
    """The registry's entry (tools/broker/accounts.py): an account served by the configured VeighNa server."""
    return VnpyBroker(env, account, _wire(env.settings), env.settings.vnpy_gateway,
                      dry_run=env.settings.vnpy_dry_run, opened_by=opened_by)


def start_problem(env: BrokerEnv) -> str | None:
    """The one line a process prints at start when the configured server does not answer."""
    try:
        _wire(env.settings).call("get_all_accounts")
    except Silent:
        return _(SILENT).format(address=env.settings.vnpy_req_address)
    return None


class VnpyBroker:
    """One account at a VeighNa server's gateway; see tools.broker.protocol.Broker."""

    kind = "vnpy"

    def __init__(self, env: BrokerEnv, name: str, wire: Wire, gateway: str, *, dry_run: bool = False,
                 opened_by: str | None = None) -> None:
        self.env, self.name, self.wire, self.gateway, self.dry_run = env, name, wire, gateway, dry_run
        self.engine, self.provider, self.config = env.engine, env.provider, env.config
        self._now = env.now or (lambda: datetime.now(SHANGHAI))
        self._prices = Prices(env.provider)
        ensure_account(env.engine, name, Decimal(0), opened_by)

    # --- the server ----------------------------------------------------------------------------------

    def silent_line(self) -> str:
        return _(SILENT).format(address=self.wire.req_address)

    def _server_orders(self) -> dict[str, Any]:
        """The server's orders of this gateway by reference."""
        return {o.reference: o for o in self.wire.call("get_all_orders")
                if o.gateway_name == self.gateway and o.reference}

    def _server_book(self) -> tuple[Decimal, Decimal, dict[str, tuple[int, int]]]:
        """(balance, frozen, {ts_code: (volume, sellable)}) at the gateway."""
        balance, frozen, held, _costs = self._server_holdings()
        return balance, frozen, held

    def _server_holdings(self) -> tuple[Decimal, Decimal, dict[str, tuple[int, int]], dict[str, Decimal]]:
        """`_server_book` and what each position cost (the gateway's average price × volume)."""
        accounts = [a for a in self.wire.call("get_all_accounts") if a.gateway_name == self.gateway]
        balance = sum((Decimal(str(a.balance)) for a in accounts), Decimal(0)).quantize(Decimal("0.01"))
        frozen = sum((Decimal(str(a.frozen)) for a in accounts), Decimal(0)).quantize(Decimal("0.01"))
        held: dict[str, tuple[int, int]] = {}
        costs: dict[str, Decimal] = {}
        for p in self.wire.call("get_all_positions"):
            code = ts_code(p.symbol, p.exchange) if p.gateway_name == self.gateway else None
            if code is None or p.direction.name == "SHORT" or p.volume <= 0:
                continue
            volume, sellable = held.get(code, (0, 0))
            held[code] = (volume + int(p.volume), sellable + max(0, int(p.yd_volume) - int(p.frozen)))
            costs[code] = costs.get(code, Decimal(0)) + (Decimal(str(p.price)) * int(p.volume)).quantize(
                Decimal("0.01"))
        return balance, frozen, held, costs

    # --- reading ----------------------------------------------------------------------------------------

    def clock(self) -> Clock:
        """The real clock, always: orders go to the market now, whatever the data's last day (quotes and checks
        read the data's latest bars)."""
        now = self._now().astimezone(SHANGHAI)
        return replace(clock_for(self.provider, self.config.live_data_days, now), mode="live",
                       today=now.strftime("%Y%m%d"))

    def notes(self) -> tuple[str, ...]:
        notes = [_(LIVE_NOTE).format(gateway=self.gateway)]
        if self.dry_run:
            notes.append(_(DRY_RUN).format(gateway=self.gateway))
        try:
            notes += [difference.line() for difference in self.differences()]
        except Silent:
            notes.append(self.silent_line())
        return tuple(notes)

    def differences(self) -> list[Difference]:  # raises Silent when the server does not answer
        """Where the broker's positions differ from what QuantDesk's fills make them: said, never overwritten."""
        _balance, _frozen, held = self._server_book()
        signed = func.sum(func.coalesce(PaperFill.quantity, 0))
        expected: dict[str, int] = {}
        with Session(self.engine) as session:
            for code, side, quantity in session.execute(select(PaperFill.ts_code, PaperFill.side, signed).where(
                    PaperFill.account == self.name).group_by(PaperFill.ts_code, PaperFill.side)):
                expected[code] = expected.get(code, 0) + (int(quantity) if side == "buy" else -int(quantity))
        return [Difference(code, held.get(code, (0, 0))[0], want)
                for code, want in sorted({**{c: 0 for c in held}, **expected}.items())
                if held.get(code, (0, 0))[0] != want]

    def account(self) -> Account:
        """The broker's cash and positions (cost: the gateway's average price), marked at the latest closes; the
        starting cash is the cash plus what the positions cost, so the P&L shown is the positions'."""
        clock = self.clock()
        try:
            balance, frozen, held, costs = self._server_holdings()
        except Silent:
            raise AccountError(self.silent_line()) from None
        prices = self._prices.closes(list(held), clock.data_end, clock.data_end)
        names = self.provider.securities(list(held)) if held else {}
        positions = tuple(Position(code, getattr(names.get(code), "name", None), volume, sellable, costs[code],
                                   Decimal("0.00"), *(prices.get(code) or (None, None)))
                          for code, (volume, sellable) in sorted(held.items()))
        start = balance + sum(costs.values(), Decimal("0.00"))
        return Account(self.name, start, balance, frozen, clock.today, "live", self.provider.price_basis, positions,
                       _(LIVE_AT).format(gateway=self.gateway))

    def positions(self) -> tuple[Position, ...]:
        return self.account().positions

    def orders(self, scope: OrderScope = "open") -> tuple[Order, ...]:
        return book_orders(self.engine, self.name, scope, self.clock().today if scope == "today" else "")

    def order(self, order_id: int) -> Order | None:
        with Session(self.engine) as session:
            row = session.get(PaperOrder, order_id)
            return order_view(session, row) if row is not None and row.account == self.name else None

    def fills(self) -> tuple[Fill, ...]:
        with Session(self.engine) as session:
            rows = session.scalars(select(PaperFill).where(PaperFill.account == self.name).order_by(PaperFill.id))
            return tuple(fill_view(r) for r in rows.all())

    def marks(self) -> list[tuple[str, Decimal, Decimal, Decimal]]:
        with Session(self.engine) as session:
            rows = session.scalars(select(PaperMark).where(PaperMark.account == self.name)
                                   .order_by(PaperMark.trade_date)).all()
            return [(r.trade_date, yuan(r.cash_fen), yuan(r.market_value_fen), yuan(r.equity_fen)) for r in rows]

    def realised(self) -> Decimal:
        return Decimal("0.00")  # the broker's statements hold it; QuantDesk does not recompute a live account's

    # --- orders ---------------------------------------------------------------------------------------

    def preview(self, request: OrderRequest) -> Preview:
        clock = self.clock()
        sess = session_for(clock, self.provider, self.config.live_fill_at)  # type: ignore[arg-type]
        q = self._prices.quote(request.ts_code, sess.date, clock.data_end)
        answer: Check | None = None
        try:
            balance, frozen, held = self._server_book()
        except Silent:
            balance, frozen, held = Decimal(0), Decimal(0), {}
            answer = Check(BROKER_CHECK, False, self.silent_line())
        prices = self._prices.closes(list(held), clock.data_end, clock.data_end)
        value = sum((prices[c][0] * v for c, (v, _s) in held.items() if c in prices), Decimal(0))
        with Session(self.engine) as session:
            orders_today, turnover_today = self._activity(session, sess.date)
            facts = AccountFacts(cash=balance, reserved=frozen, market_value=value, day_start_equity=balance + value,
                                 held=held.get(request.ts_code, (0, 0))[0],
                                 sellable=held.get(request.ts_code, (0, 0))[1], orders_today=orders_today,
                                 turnover_today=turnover_today)
            preview = judge(request, facts, q, sess, clock, self.config, trading_on=trading_enabled(session),
                            mandate=load_mandate(session, self.name),
                            notes=(*self._order_notes(), _(NO_DAILY_LOSS)))
        reached = answer or Check(BROKER_CHECK, True, _(SENT).format(gateway=self.gateway))
        return replace(preview, checks=(reached, *preview.checks),
                       fill_label=_(FILLS_AT_BROKER).format(gateway=self.gateway))

    def _order_notes(self) -> tuple[str, ...]:
        return (_(DRY_RUN).format(gateway=self.gateway),) if self.dry_run else ()

    def _activity(self, session: Session, session_date: str) -> tuple[int, Decimal]:
        rows = session.execute(select(PaperOrder.status, PaperOrder.reserved_fen).where(
            PaperOrder.account == self.name, PaperOrder.session_date == session_date)).all()
        filled = session.scalar(select(func.coalesce(func.sum(PaperFill.value_fen), 0)).where(
            PaperFill.account == self.name, PaperFill.trade_date == session_date)) or 0
        return len(rows), yuan(int(filled) + sum(r for s, r in rows if s == "open"))

    def submit(self, request: OrderRequest) -> Order:
        """Check, write to the book, then send once; a repeat of the client order id returns the booked order."""
        with Session(self.engine) as session:
            existing = session.scalar(select(PaperOrder).where(PaperOrder.client_order_id == request.client_order_id))
            if existing is not None:
                return order_view(session, existing)
        preview = self.preview(request)
        if not preview.passed:
            failed = preview.failed[0]
            reason = _("order refused by the {check} check: {detail}").format(check=_(failed.name),
                                                                            detail=failed.detail)
            log_event(self.engine, request.client_order_id, self.name, "refused", request.approved_by,
                      {"reason": reason})
            raise OrderRejected(reason, preview.checks)
        order_id = self._book(request, preview)
        if self.dry_run:
            log.info("dry run: order %s of %s not sent to %s", order_id, self.name, self.gateway)
            self._end(order_id, "cancelled", DRY_RUN.format(gateway=self.gateway), "dry run", {})
            return self._view(order_id)
        _SENDING.add(request.client_order_id)
        try:
            logged = self.wire.logged
            vt_orderid = self.wire.call("send_order", self._request(request), self.gateway)
            if vt_orderid:
                self._note(order_id, SENT.format(gateway=self.gateway), "sent", {"vt_orderid": vt_orderid})
            else:  # the gateway refused it before placing it (an order type it lacks, or it is not connected)
                self._end(order_id, "rejected", NOT_TAKEN.format(gateway=self.gateway, why=self._said_since(logged)),
                          None, {})
        except Silent:
            log.warning("order %s of %s: the server did not answer the send; looking it up", order_id, self.name)
        finally:
            _SENDING.discard(request.client_order_id)
        self.settle()
        return self._view(order_id)

    def _request(self, request: OrderRequest) -> Any:
        from vnpy.trader.constant import Direction, Offset, OrderType
        from vnpy.trader.object import OrderRequest as VnpyRequest

        symbol, exchange = vnpy_symbol(request.ts_code)
        kind = OrderType.LIMIT if request.price_type == "limit" else OrderType.MARKET
        return VnpyRequest(symbol=symbol, exchange=exchange,
                           direction=Direction.LONG if request.side == "buy" else Direction.SHORT, type=kind,
                           volume=float(request.quantity), price=float(request.limit_price or 0),
                           offset=Offset.NONE, reference=request.client_order_id)

    def _book(self, request: OrderRequest, preview: Preview) -> int:
        """The order written (and committed) before it is sent: the record a restart looks up by reference."""
        with write_lock(self.engine, self.name) as session:
            row = PaperOrder(
                client_order_id=request.client_order_id, account=self.name, ts_code=request.ts_code,
                name=preview.name, side=request.side, quantity=request.quantity, price_type=request.price_type,
                limit_price_fen=to_fen(request.limit_price) if request.limit_price is not None else None,
                session_date=preview.session_date, fill_at=preview.fill_at, status="open", reserved_fen=0,
                thread_id=request.thread_id, proposed_by=request.proposed_by, approved_by=request.approved_by,
                reason=request.reason, tag=request.tag, note=SENDING.format(gateway=self.gateway))
            session.add(row)
            session.flush()
            record_event(session, request.client_order_id, self.name, "submitted", request.approved_by,
                         {"order_id": row.id, "broker": "vnpy", "gateway": self.gateway,
                          "session": preview.session_date})
            return row.id

    def _view(self, order_id: int) -> Order:
        found = self.order(order_id)
        assert found is not None
        return found

    def _note(self, order_id: int, note: str, event: str, detail: dict[str, Any]) -> None:
        with write_lock(self.engine, self.name) as session:
            row = session.get(PaperOrder, order_id)
            if row is not None and row.status == "open":
                row.note = note
                record_event(session, row.client_order_id, self.name, event, None, {"order_id": order_id, **detail})

    def _end(self, order_id: int, status: str, note: str, by: str | None, detail: dict[str, Any]) -> None:
        with write_lock(self.engine, self.name) as session:
            row = session.get(PaperOrder, order_id)
            if row is not None and row.status == "open":
                row.status, row.note = status, note
                record_event(session, row.client_order_id, self.name, status, by,
                             {"order_id": order_id, "note": note, **detail})

    def cancel(self, order_id: int, by: str | None) -> Order:
        row = self.order(order_id)
        if row is None:
            raise AccountError(_("there is no order {order} in account {account}").format(order=order_id,
                                                                                          account=self.name))
        if row.status != "open":
            raise AccountError(_("order {order} is {status}: only an open order can be cancelled").format(
                order=order_id, status=row.status))
        try:
            found = self._server_orders().get(row.client_order_id)
        except Silent:
            raise AccountError(self.silent_line()) from None
        if found is not None and found.is_active():
            self.wire.call("cancel_order", found.create_cancel_request(), self.gateway)
            log_event(self.engine, row.client_order_id, self.name, "cancel sent", by, {"order_id": order_id})
        return self._await_end(order_id)

    def _await_end(self, order_id: int, tries: int = 20) -> Order:
        """Settle until the order is no longer open at the server, for a moment (the gateway answers a cancel)."""
        for _attempt in range(tries):
            self.settle()
            order = self._view(order_id)
            if order.status != "open":
                return order
            threading.Event().wait(0.05)
        return self._view(order_id)

    def halt(self, by: str) -> tuple[Order, ...]:
        """Trading off: every open order of the account still active at the server is cancelled there."""
        try:
            server = self._server_orders()
        except Silent:
            log.warning("trading off: the VeighNa server of %s does not answer; its orders stay", self.name)
            return ()
        ended = []
        for order in self.orders("open"):
            found = server.get(order.client_order_id)
            if found is not None and found.is_active():
                self.wire.call("cancel_order", found.create_cancel_request(), self.gateway)
                log_event(self.engine, order.client_order_id, self.name, "cancel sent", by,
                          {"order_id": order.id, "why": "trading off"})
            ended.append(self._await_end(order.id))
        return tuple(ended)

    def resolve(self, order_id: int, outcome: str, price: Decimal | None, by: str) -> Order:
        return resolve_unknown(self.engine, self.name, order_id, outcome, price, by, self.config.rates)

    def reset(self, starting_cash: Decimal, by: str) -> None:
        raise AccountError(_("account {name} trades at {gateway} through VeighNa: a live account cannot be "
                             "reset").format(name=self.name, gateway=self.gateway))

    def mark(self, day: str, now: datetime | None = None) -> None:
        """The equity curve's point: the broker's cash and positions at the day's closes."""
        account = self.account()
        with write_lock(self.engine, self.name) as session:
            mark = session.get(PaperMark, (self.name, day))
            cash, value = to_fen(account.cash), to_fen(account.market_value)
            if mark is None:
                session.add(PaperMark(account=self.name, trade_date=day, cash_fen=cash, market_value_fen=value,
                                      equity_fen=cash + value))
            else:
                mark.cash_fen, mark.market_value_fen, mark.equity_fen = cash, value, cash + value

    # --- what comes back ------------------------------------------------------------------------------

    def settle(self, now: datetime | None = None) -> list[Order]:
        """The book brought up to the server's word: new trades become fills, and filled, cancelled and rejected
        orders end; an order the server does not know (after its send's answer was lost) becomes "unknown"."""
        with Session(self.engine) as session:
            open_rows = session.scalars(select(PaperOrder).where(PaperOrder.account == self.name,
                                                                 PaperOrder.status == "open")).all()
        if not open_rows:
            return []
        try:
            server = self._server_orders()
            trades = self.wire.call("get_all_trades")
        except Silent:
            return []
        changed = []
        for row in open_rows:
            found = server.get(row.client_order_id)
            if found is None:
                if self._lost(row):
                    self._end(row.id, "unknown", UNKNOWN.format(gateway=self.gateway, reference=row.client_order_id,
                                                                order=row.id), None, {})
                    changed.append(self._view(row.id))
                continue
            reason = self._reason(found) if found.status.name == "REJECTED" else ""  # read before the lock
            if self._take_in(row.id, found, [t for t in trades if t.vt_orderid == found.vt_orderid], reason):
                changed.append(self._view(row.id))
        return changed

    def _lost(self, row: PaperOrder) -> bool:
        """Whether a booked order the server does not know is lost: not being sent now by this process, and booked
        longer ago than an answer takes."""
        created = row.created_at if row.created_at.tzinfo else row.created_at.replace(tzinfo=UTC)
        waited = datetime.now(UTC) - created
        return row.client_order_id not in _SENDING and waited > timedelta(seconds=self.wire.timeout)

    def _take_in(self, order_id: int, found: Any, trades: list[Any], reason: str) -> bool:
        """The server's order and trades into the book; whether anything changed."""
        with write_lock(self.engine, self.name) as session:
            row = session.get(PaperOrder, order_id)
            if row is None or row.status != "open":
                return False
            known = set(session.scalars(select(PaperFill.basis).where(PaperFill.order_id == order_id)).all())
            changed = False
            for trade in trades:
                basis = TRADED.format(quantity=f"{int(trade.volume):,}", price=f"{Decimal(str(trade.price)):.2f}",
                                      gateway=self.gateway, trade=trade.tradeid)
                if basis in known:
                    continue
                self._fill(session, row, trade, basis)
                changed = True
            status = found.status.name
            filled = int(found.traded)
            if status == "ALLTRADED":
                row.status, row.note = "filled", GATEWAY_FILLED.format(
                    quantity=f"{filled:,}", price=f"{Decimal(str(found.price)):.2f}", gateway=self.gateway)
            elif status == "CANCELLED":
                row.status, row.note = "cancelled", GATEWAY_CANCELLED.format(gateway=self.gateway)
            elif status == "REJECTED":
                row.status, row.note = "rejected", GATEWAY_REJECTED.format(gateway=self.gateway, why=reason)
            else:
                note = (PART_FILLED.format(gateway=self.gateway, filled=f"{filled:,}", quantity=f"{row.quantity:,}")
                        if filled else SENT.format(gateway=self.gateway))
                changed = changed or note != row.note
                row.note = note
            if row.status != "open":
                record_event(session, row.client_order_id, self.name, row.status, None,
                             {"order_id": order_id, "note": row.note, "vt_orderid": found.vt_orderid})
                return True
            return changed

    def _reason(self, found: Any) -> str:
        """The gateway's reason for a rejection: its latest log line naming the order (VeighNa's OrderData has no
        reason; gateways log it)."""
        return self._gateway_said(lambda: [msg for gateway, msg in reversed(self.wire.logs)
                                           if gateway == self.gateway and found.orderid in msg][:1])

    def _said_since(self, logged: int) -> str:
        """What the gateway logged after the wire's first `logged` lines (a send it refused says why there:
        VeighNa's gateways log an unsupported order type and return no order id)."""
        return self._gateway_said(lambda: [msg for gateway, msg in self.wire.logs_since(logged)
                                           if gateway == self.gateway])

    def _gateway_said(self, lines: Callable[[], list[str]]) -> str:
        """The gateway's log `lines` as one, waiting a second for them: the log event may trail the answer."""
        for _attempt in range(20):
            said = lines()
            if said:
                return "; ".join(said)
            threading.Event().wait(0.05)
        return "the gateway gave no reason in its log; see the VeighNa trader's log"

    def _fill(self, session: Session, row: PaperOrder, trade: Any, basis: str) -> None:
        price = Decimal(str(trade.price)).quantize(Decimal("0.01"))
        quantity = int(trade.volume)
        value = (price * quantity).quantize(Decimal("0.01"))
        when = (trade.datetime or datetime.now(SHANGHAI)).astimezone(SHANGHAI).strftime("%Y%m%d")
        fees = fill_fees(row.ts_code, row.side, value, datetime.strptime(when, "%Y%m%d").date(),  # type: ignore[arg-type]
                         self.config.rates)
        session.add(PaperFill(order_id=row.id, account=self.name, ts_code=row.ts_code, side=row.side,
                              quantity=quantity, price_fen=to_fen(price), value_fen=to_fen(value),
                              commission_fen=to_fen(fees.commission), stamp_duty_fen=to_fen(fees.stamp_duty),
                              transfer_fee_fen=to_fen(fees.transfer_fee), handling_fee_fen=to_fen(fees.handling_fee),
                              regulator_fee_fen=to_fen(fees.regulator_fee), trade_date=when, basis=basis))
        session.flush()
        record_event(session, row.client_order_id, self.name, "fill", None,
                     {"order_id": row.id, "price_fen": to_fen(price), "quantity": quantity,
                      "trade": str(trade.tradeid)})
