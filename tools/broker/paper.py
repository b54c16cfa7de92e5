"""The paper broker: one account in the database, filled from the provider's bars under the A-share rules.
Every change (order, reservation, fill, fees, position, ledger, mark) is written in one transaction under
the account's write lock."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal

from sqlalchemy import Engine, delete, func, select
from sqlalchemy.orm import Session

from tools.broker.accounts import BrokerEnv
from tools.broker.book import book_orders, fill_view, order_view, resolve_unknown
from tools.broker.clock import SHANGHAI, Clock, day, session_for, trading_days, ymd
from tools.broker.config import TradingConfig
from tools.broker.fees import FEN, fill_fees
from tools.broker.fills import fill_price
from tools.broker.mandate import load_mandate
from tools.broker.market import Prices, Quote
from tools.broker.money import to_fen, yuan
from tools.broker.notes import CANCELLED_BY, MANDATE_REFUSED, NO_CASH, NO_SHARES, NO_TRADING_DAY, SIMULATED
from tools.broker.orders import (
    STATUS_WORDS,
    Account,
    Difference,
    Fill,
    Order,
    OrderRejected,
    OrderRequest,
    Position,
    Preview,
)
from tools.broker.pretrade import AccountFacts, judge, limits_for, mandate_at_fill, reserve_of
from tools.broker.protocol import OrderScope
from tools.broker.records import CashEntry, PaperAccount, PaperFill, PaperMark, PaperOrder, PaperPosition
from tools.broker.sim_clock import paper_clock
from tools.broker.store import AccountError, ensure_account, log_event, record_event, trading_enabled, write_lock
from tools.data.provider import MarketDataProvider
from tools.i18n import N_, _, using

log = logging.getLogger(__name__)

NOT_MODELLED = N_("dividends and bonus shares are not modelled: positions and cash ignore them")
BASIS_NOTES = {
    "forward-adjusted": N_("fills are simulated on forward-adjusted prices, not the prices that traded that day"),
    "unknown": N_("the data's price basis is unknown (set QUANTDESK_LOCAL_PRICE_BASIS): fills may be on adjusted "
                  "prices"),
}


PaperConfig = TradingConfig  # the paper broker reads the desk's trading configuration as it is


class PaperBroker:
    """One paper account (created with the starting cash on first use); see tools.broker.protocol.Broker."""

    kind = "paper"

    def __init__(self, engine: Engine, provider: MarketDataProvider, name: str, config: PaperConfig, *,
                 now: Callable[[], datetime] | None = None, opened_by: str | None = None) -> None:
        self.engine, self.provider, self.name, self.config = engine, provider, name, config
        self._now = now or (lambda: datetime.now(SHANGHAI))
        self._prices = Prices(provider)
        ensure_account(engine, name, config.starting_cash, opened_by)

    # --- clock ----------------------------------------------------------------------------------------

    def clock(self) -> Clock:
        """Live, or the simulated session clock every account shares (tools/broker/sim_clock.py)."""
        return paper_clock(self.engine, self.provider, self.config.live_data_days, self._now())

    def notes(self) -> tuple[str, ...]:
        """What the account's numbers do and do not model."""
        basis = BASIS_NOTES.get(self.provider.price_basis)
        return tuple(_(n) for n in (basis, NOT_MODELLED) if n)

    def differences(self) -> list[Difference]:
        """None: the paper account is the desk's own book."""
        return []

    # --- reading --------------------------------------------------------------------------------------

    def account(self) -> Account:
        clock = self.clock()
        with Session(self.engine) as session:
            row = self._row(session)
            positions = self._positions(session, clock)
            return Account(self.name, yuan(row.starting_cash_fen), yuan(row.cash_fen), yuan(row.reserved_fen),
                           clock.today, clock.mode, self.provider.price_basis, positions)

    def positions(self) -> tuple[Position, ...]:
        with Session(self.engine) as session:
            return self._positions(session, self.clock())

    def orders(self, scope: OrderScope = "open") -> tuple[Order, ...]:
        return book_orders(self.engine, self.name, scope, self.clock().today if scope == "today" else "")

    def order(self, order_id: int) -> Order | None:
        with Session(self.engine) as session:
            row = session.get(PaperOrder, order_id)
            return order_view(session, row) if row is not None and row.account == self.name else None

    def fills(self) -> tuple[Fill, ...]:
        with Session(self.engine) as session:
            rows = session.scalars(select(PaperFill).where(PaperFill.account == self.name)
                                   .order_by(PaperFill.id)).all()
            return tuple(fill_view(r) for r in rows)

    def marks(self) -> list[tuple[str, Decimal, Decimal, Decimal]]:
        """The equity curve: (date, cash, market value, equity), oldest first."""
        with Session(self.engine) as session:
            rows = session.scalars(select(PaperMark).where(PaperMark.account == self.name)
                                   .order_by(PaperMark.trade_date)).all()
            return [(r.trade_date, yuan(r.cash_fen), yuan(r.market_value_fen), yuan(r.equity_fen)) for r in rows]

    # --- orders ---------------------------------------------------------------------------------------

    def preview(self, request: OrderRequest) -> Preview:
        clock = self.clock()
        with Session(self.engine) as session:
            return self._preview(session, request, clock)

    def submit(self, request: OrderRequest) -> Order:
        """Place an approved order (idempotent on its client order id); on the simulated clock it fills at once
        at the last available close."""
        try:
            with write_lock(self.engine, self.name) as session:
                existing = session.scalar(select(PaperOrder).where(
                    PaperOrder.client_order_id == request.client_order_id))
                if existing is not None:
                    return order_view(session, existing)
                clock = self.clock()
                preview = self._preview(session, request, clock)
                if not preview.passed:
                    failed = preview.failed[0]
                    raise OrderRejected(_("order refused by the {check} check: {detail}").format(
                        check=_(failed.name), detail=failed.detail), preview.checks)
                row = self._place(session, request, preview)
                if clock.simulated:
                    self._execute(session, row)
                session.flush()
                return order_view(session, row)
        except OrderRejected as exc:
            log_event(self.engine, request.client_order_id, self.name, "refused", request.approved_by,
                      {"reason": str(exc)})
            raise

    def cancel(self, order_id: int, by: str | None) -> Order:
        with write_lock(self.engine, self.name) as session:
            row = session.get(PaperOrder, order_id)
            if row is None or row.account != self.name:
                raise AccountError(_("there is no order {order} in account {account}").format(order=order_id,
                                                                                              account=self.name))
            if row.status != "open":
                raise AccountError(_("order {order} is {status}: only an open order can be cancelled").format(
                    order=order_id, status=_(STATUS_WORDS.get(row.status, row.status))))
            self._close(session, row, "cancelled", CANCELLED_BY.format(who=by or "unknown"), by)
            return order_view(session, row)

    def at(self, now: datetime | None) -> PaperBroker:
        """The account as of `now` (None: this broker's own clock)."""
        if now is None:
            return self
        return PaperBroker(self.engine, self.provider, self.name, self.config, now=lambda: now)

    def halt(self, by: str) -> tuple[Order, ...]:
        """The switch alone stops the paper account: its open orders wait (unfilled) until trading is on again."""
        return ()

    def resolve(self, order_id: int, outcome: str, price: Decimal | None, by: str) -> Order:
        """A paper order is never unknown: this says so (see Broker.resolve)."""
        return resolve_unknown(self.engine, self.name, order_id, outcome, price, by, self.config.rates)

    def reset(self, starting_cash: Decimal, by: str) -> None:
        reset_account(self.engine, self.name, starting_cash, by)

    def settle(self, now: datetime | None = None) -> list[Order]:
        """Fill (or expire) open orders whose session's bar exists now; roll an order whose day was no trading
        day to the next session. Returns the orders that changed."""
        if now is not None:
            return self.at(now).settle()
        clock = self.clock()
        changed: list[Order] = []
        with Session(self.engine) as session:
            due = session.scalars(select(PaperOrder.id).where(
                PaperOrder.account == self.name, PaperOrder.status == "open",
                PaperOrder.session_date <= clock.data_end).order_by(PaperOrder.id)).all()
        for order_id in due:
            with write_lock(self.engine, self.name) as session:
                row = session.get(PaperOrder, order_id)
                if row is None or row.status != "open" or not trading_enabled(session):
                    continue
                if self._execute(session, row):
                    session.flush()
                    changed.append(order_view(session, row))
        return changed

    def mark(self, day_: str, now: datetime | None = None) -> None:
        if now is not None:
            return self.at(now).mark(day_)
        with write_lock(self.engine, self.name) as session:
            self._mark(session, day_, self.clock().data_end)

    # --- internals ------------------------------------------------------------------------------------

    def _row(self, session: Session) -> PaperAccount:
        row = session.get(PaperAccount, self.name)
        if row is None:
            raise AccountError(_("there is no paper account named {name}").format(name=self.name))
        session.info["account"] = row  # the identity map holds unchanged rows weakly: later gets reuse this one
        return row

    def _position(self, session: Session, code: str) -> PaperPosition | None:
        """The account's position in `code`, held for the rest of the transaction like the account row."""
        row = session.get(PaperPosition, (self.name, code))
        session.info[("position", code)] = row
        return row

    def _quote(self, request: OrderRequest, clock: Clock, session_date: str) -> Quote:
        return self._prices.quote(request.ts_code, session_date, clock.data_end)

    def _preview(self, session: Session, request: OrderRequest, clock: Clock) -> Preview:
        """The shared pre-trade layer (tools/broker/pretrade.py) on this account's facts, read inside `session`."""
        sess = session_for(clock, self.provider, self.config.live_fill_at)  # type: ignore[arg-type]
        q = self._quote(request, clock, sess.date)
        return judge(request, self._facts(session, request.ts_code, sess.date, clock, None), q, sess, clock,
                     self.config, trading_on=trading_enabled(session), mandate=load_mandate(session, self.name),
                     notes=self.notes())

    def _facts(self, session: Session, code: str, session_date: str, clock: Clock, placed: PaperOrder | None
               ) -> AccountFacts:
        """What the checks read about the account; `placed`: an order placed already, left out of the session's
        activity it is judged against (the mandate at the fill)."""
        account = self._row(session)
        position = self._position(session, code)
        held = position.quantity if position else 0
        orders_today, turnover_today = self._session_activity(session, session_date)
        if placed is not None:
            orders_today, turnover_today = orders_today - 1, turnover_today - yuan(placed.reserved_fen)
        return AccountFacts(cash=yuan(account.cash_fen), reserved=yuan(account.reserved_fen),
                            market_value=self._market_value(session, clock),
                            day_start_equity=self._day_start_equity(session, account, clock.today), held=held,
                            sellable=self._sellable(session, code, held, session_date), orders_today=orders_today,
                            turnover_today=turnover_today)

    def _session_activity(self, session: Session, session_date: str) -> tuple[int, Decimal]:
        """(orders, turnover) of the account in a session, for its mandate: every order placed for it, and the
        value of its fills plus what its open orders hold back."""
        rows = session.execute(select(PaperOrder.id, PaperOrder.status, PaperOrder.reserved_fen).where(
            PaperOrder.account == self.name, PaperOrder.session_date == session_date)).all()
        filled = session.scalar(select(func.coalesce(func.sum(PaperFill.value_fen), 0)).where(
            PaperFill.account == self.name, PaperFill.trade_date == session_date)) or 0
        held = sum(reserved for _, status, reserved in rows if status == "open")
        return len(rows), yuan(int(filled) + held)

    def _place(self, session: Session, request: OrderRequest, preview: Preview) -> PaperOrder:
        reserve = 0
        if request.side == "buy":
            reserve = to_fen(reserve_of(preview, self.config))
        row = PaperOrder(
            client_order_id=request.client_order_id, account=self.name, ts_code=request.ts_code, name=preview.name,
            side=request.side, quantity=request.quantity, price_type=request.price_type,
            limit_price_fen=to_fen(request.limit_price) if request.limit_price is not None else None,
            session_date=preview.session_date, fill_at=preview.fill_at, status="open", reserved_fen=reserve,
            thread_id=request.thread_id, proposed_by=request.proposed_by, approved_by=request.approved_by,
            reason=request.reason, tag=request.tag, note=preview.fill_label)
        session.add(row)
        self._row(session).reserved_fen += reserve
        session.flush()
        record_event(session, request.client_order_id, self.name, "submitted", request.approved_by,
                     {"order_id": row.id, "session": preview.session_date, "reserved_fen": reserve})
        return row

    def _execute(self, session: Session, row: PaperOrder) -> bool:
        """Fill the order on its session's bar, expire it when that bar cannot fill it, roll it to the next
        session when the day was not a trading day (and settle it there at once when that bar exists); False
        when its bar does not exist yet."""
        clock = self.clock()
        q = self._prices.quote(row.ts_code, row.session_date, clock.data_end)
        if q.session_bar is None:
            if clock.data_end < row.session_date:
                return False  # the session has not happened (or its bar is not published) yet
            if row.session_date not in self.provider.calendar(row.session_date, row.session_date):
                following, _note = trading_days(self.provider, _next_day(row.session_date), 1)
                record_event(session, row.client_order_id, self.name, "rolled", None,
                             {"from": row.session_date, "to": following[0]})
                row.note = NO_TRADING_DAY[row.fill_at].format(day=row.session_date, next=following[0])
                row.session_date = following[0]
                self._execute(session, row)  # the next session's bar may exist already
                return True
        limits = limits_for(row.ts_code, row.session_date, q)
        limit_price = yuan(row.limit_price_fen) if row.limit_price_fen is not None else None
        outcome = fill_price(row.side, row.price_type, limit_price, row.fill_at, q.session_bar, row.session_date,
                             limits)
        if outcome.price is None:
            self._close(session, row, "expired", outcome.reason, None)
            return True
        refusal = self._mandate_refusal(session, row, outcome.price, q, clock)
        if refusal is not None:
            self._close(session, row, "expired", MANDATE_REFUSED.format(why=refusal), None)
            return True
        basis = SIMULATED if row.note.startswith(SIMULATED) else outcome.reason  # as placed
        self._fill(session, row, outcome.price, basis, clock.data_end)
        return True

    def _mandate_refusal(self, session: Session, row: PaperOrder, price: Decimal, q: Quote, clock: Clock
                         ) -> str | None:
        """Why the account's mandate, checked again at the fill (its lines, the session's ST status), refuses the
        order, in English as the order's note keeps it; None when it allows it or there is none."""
        mandate = load_mandate(session, self.name)
        if mandate is None:
            return None
        facts = self._facts(session, row.ts_code, row.session_date, clock, row)
        with using("en"):
            check = mandate_at_fill(mandate, row.ts_code, row.side, (price * row.quantity).quantize(FEN), q, facts)
        if not check.passed:
            log.info("order %s of %s refused at the fill by the mandate: %s", row.id, self.name, check.detail)
        return None if check.passed else check.detail

    def _fill(self, session: Session, row: PaperOrder, price: Decimal, basis: str, data_end: str) -> None:
        value = (price * row.quantity).quantize(Decimal("0.01"))
        fees = fill_fees(row.ts_code, row.side, value, day(row.session_date), self.config.rates)  # type: ignore[arg-type]
        account = self._row(session)
        position = self._position(session, row.ts_code)
        value_fen, fees_fen = to_fen(value), to_fen(fees.total)
        if row.side == "buy":
            if account.cash_fen - (account.reserved_fen - row.reserved_fen) < value_fen + fees_fen:
                self._close(session, row, "expired", NO_CASH, None)
                return
            account.cash_fen -= value_fen + fees_fen
            account.reserved_fen -= row.reserved_fen
            row.reserved_fen = 0
            if position is None:
                position = PaperPosition(account=self.name, ts_code=row.ts_code, quantity=0, cost_fen=0,
                                         realised_fen=0)
                session.add(position)
            position.quantity += row.quantity
            position.cost_fen += value_fen + fees_fen
            cash_moves = [(-value_fen, "buy"), (-fees_fen, "fees")]
        else:
            if position is None or position.quantity < row.quantity:
                self._close(session, row, "expired", NO_SHARES, None)
                return
            removed = _pro_rata(position.cost_fen, row.quantity, position.quantity)
            account.cash_fen += value_fen - fees_fen
            position.realised_fen += value_fen - fees_fen - removed
            position.cost_fen -= removed
            position.quantity -= row.quantity
            cash_moves = [(value_fen, "sell"), (-fees_fen, "fees")]
        fill = PaperFill(order_id=row.id, account=self.name, ts_code=row.ts_code, side=row.side,
                         quantity=row.quantity, price_fen=to_fen(price), value_fen=value_fen,
                         commission_fen=to_fen(fees.commission), stamp_duty_fen=to_fen(fees.stamp_duty),
                         transfer_fee_fen=to_fen(fees.transfer_fee), handling_fee_fen=to_fen(fees.handling_fee),
                         regulator_fee_fen=to_fen(fees.regulator_fee), trade_date=row.session_date, basis=basis)
        session.add(fill)
        balance = account.cash_fen - sum(amount for amount, _ in cash_moves)
        for amount, kind in cash_moves:
            balance += amount
            session.add(CashEntry(account=self.name, amount_fen=amount, balance_fen=balance, kind=kind,
                                  order_id=row.id, trade_date=row.session_date))
        row.status, row.note = "filled", basis
        session.flush()
        record_event(session, row.client_order_id, self.name, "filled", None,
                     {"order_id": row.id, "price_fen": to_fen(price), "value_fen": value_fen, "fees_fen": fees_fen,
                      "trade_date": row.session_date, "basis": basis})
        self._mark(session, row.session_date, data_end)

    def _close(self, session: Session, row: PaperOrder, status: str, note: str, by: str | None) -> None:
        """End an open order without a fill, releasing the cash it held back."""
        self._row(session).reserved_fen -= row.reserved_fen
        row.reserved_fen, row.status, row.note = 0, status, note
        record_event(session, row.client_order_id, self.name, status, by, {"order_id": row.id, "note": note})

    def _mark(self, session: Session, day_: str, data_end: str) -> None:
        account = self._row(session)
        held = session.scalars(select(PaperPosition).where(PaperPosition.account == self.name,
                                                           PaperPosition.quantity > 0)).all()
        prices = self._prices.closes([p.ts_code for p in held], day_, data_end)
        value = sum((to_fen(prices[p.ts_code][0] * p.quantity) if p.ts_code in prices else p.cost_fen)
                    for p in held)
        mark = session.get(PaperMark, (self.name, day_))
        if mark is None:
            session.add(PaperMark(account=self.name, trade_date=day_, cash_fen=account.cash_fen,
                                  market_value_fen=value, equity_fen=account.cash_fen + value))
        else:
            mark.cash_fen, mark.market_value_fen, mark.equity_fen = account.cash_fen, value, account.cash_fen + value

    def _positions(self, session: Session, clock: Clock) -> tuple[Position, ...]:
        rows = session.scalars(select(PaperPosition).where(PaperPosition.account == self.name)
                               .order_by(PaperPosition.ts_code)).all()
        held = [r for r in rows if r.quantity > 0]
        prices = self._prices.closes([r.ts_code for r in held], clock.today, clock.data_end)
        names = self.provider.securities([r.ts_code for r in held]) if held else {}
        return tuple(
            Position(r.ts_code, getattr(names.get(r.ts_code), "name", None), r.quantity,
                     self._sellable(session, r.ts_code, r.quantity, clock.today), yuan(r.cost_fen),
                     yuan(r.realised_fen), *(prices.get(r.ts_code) or (None, None)))
            for r in held)

    def _market_value(self, session: Session, clock: Clock) -> Decimal:
        """The positions at their marks, as in Account.market_value (a code without a close counts 0)."""
        held = session.execute(select(PaperPosition.ts_code, PaperPosition.quantity).where(
            PaperPosition.account == self.name, PaperPosition.quantity > 0)).all()
        prices = self._prices.closes([code for code, _ in held], clock.today, clock.data_end)
        return sum((prices[code][0] * quantity for code, quantity in held if code in prices), yuan(0))

    def realised(self) -> Decimal:
        """Realised P&L over every position, closed ones included."""
        with Session(self.engine) as session:
            total = session.scalar(select(func.coalesce(func.sum(PaperPosition.realised_fen), 0))
                                   .where(PaperPosition.account == self.name))
            return yuan(int(total or 0))

    def _sellable(self, session: Session, code: str, held: int, session_date: str) -> int:
        """T+1: held shares less those bought on the session date and those open sell orders hold."""
        bought = session.scalar(select(func.coalesce(func.sum(PaperFill.quantity), 0)).where(
            PaperFill.account == self.name, PaperFill.ts_code == code, PaperFill.side == "buy",
            PaperFill.trade_date >= session_date)) or 0
        selling = session.scalar(select(func.coalesce(func.sum(PaperOrder.quantity), 0)).where(
            PaperOrder.account == self.name, PaperOrder.ts_code == code, PaperOrder.side == "sell",
            PaperOrder.status == "open")) or 0
        return max(0, held - int(bought) - int(selling))

    def _day_start_equity(self, session: Session, account: PaperAccount, today: str) -> Decimal:
        fen = session.scalar(select(PaperMark.equity_fen).where(PaperMark.account == self.name,
                                                                PaperMark.trade_date < today)
                             .order_by(PaperMark.trade_date.desc()).limit(1))
        return yuan(account.starting_cash_fen if fen is None else fen)



def _pro_rata(cost_fen: int, quantity: int, held: int) -> int:
    """The cost of `quantity` of `held` shares, rounded half-up to the fen (all of it when all are sold)."""
    if quantity >= held:
        return cost_fen
    return (2 * cost_fen * quantity + held) // (2 * held)


def _next_day(day_: str) -> str:
    return ymd(day(day_) + timedelta(days=1))




def reset_account(engine: Engine, name: str, starting_cash: Decimal, by: str) -> None:
    """Start the account over: orders, fills, positions, ledger and marks go; the audit trail stays."""
    with write_lock(engine, name) as session:
        account = session.get(PaperAccount, name)
        if account is None:
            raise AccountError(_("there is no paper account named {name}").format(name=name))
        for table in (PaperFill, PaperOrder, PaperPosition, CashEntry, PaperMark):
            session.execute(delete(table).where(table.account == name))
        cash = to_fen(starting_cash)
        account.starting_cash_fen, account.cash_fen, account.reserved_fen = cash, cash, 0
        session.add(CashEntry(account=name, amount_fen=cash, balance_fen=cash, kind="deposit"))
        record_event(session, None, name, "account reset", by, {"starting_cash_fen": cash})


def open_broker(env: BrokerEnv, account: str, opened_by: str | None) -> PaperBroker:
    """The registry's entry (tools/broker/accounts.py): a paper account."""
    return PaperBroker(env.engine, env.provider, account, env.config, now=env.now, opened_by=opened_by)
