"""The desk's own order book, which every broker keeps in the same tables (tools/broker/records.py): the accounts
it knows, which account an order belongs to, and what a proposer's orders did. A broker reads and writes it; the
registry (tools/broker/accounts.py) reads it to find accounts and orders whichever broker serves them."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import Engine, case, func, select
from sqlalchemy.orm import Session

from tools.broker.clock import SHANGHAI
from tools.broker.fees import FeeRates, fill_fees
from tools.broker.money import to_fen, yuan
from tools.broker.notes import MARKED
from tools.broker.orders import Fill, Order
from tools.broker.records import PaperAccount, PaperFill, PaperOrder
from tools.broker.store import AccountError, record_event, write_lock
from tools.i18n import _

ORDER_HISTORY = 200  # orders `orders all` returns, newest first

OUTCOMES = {"filled": "filled", "cancelled": "cancelled", "unsent": "expired"}  # a trader's word -> the status


def account_names(engine: Engine) -> list[str]:
    with Session(engine) as session:
        return list(session.scalars(select(PaperAccount.name).order_by(PaperAccount.name)).all())


def accounts_with_open_orders(engine: Engine) -> list[str]:
    with Session(engine) as session:
        return list(session.scalars(select(PaperOrder.account).where(PaperOrder.status == "open").distinct()
                                    .order_by(PaperOrder.account)).all())


def order_account(engine: Engine, order_id: int) -> str | None:
    """The account an order belongs to."""
    with Session(engine) as session:
        row = session.get(PaperOrder, order_id)
        return row.account if row is not None else None


def tagged_position(engine: Engine, account: str, code: str, tag: str) -> tuple[int, int]:
    """(shares held, open orders) of what orders tagged `tag` did in `account`'s `code`: net filled quantity, so
    a proposer's position follows the fills, including fills a settle job made later."""
    signed = case((PaperFill.side == "buy", PaperFill.quantity), else_=-PaperFill.quantity)
    with Session(engine) as session:
        held = session.scalar(select(func.coalesce(func.sum(signed), 0)).join(
            PaperOrder, PaperOrder.id == PaperFill.order_id).where(
            PaperOrder.account == account, PaperOrder.ts_code == code, PaperOrder.tag == tag))
        waiting = session.scalar(select(func.count()).select_from(PaperOrder).where(
            PaperOrder.account == account, PaperOrder.ts_code == code, PaperOrder.tag == tag,
            PaperOrder.status == "open"))
    return int(held or 0), int(waiting or 0)


def book_orders(engine: Engine, account: str, scope: str, today: str) -> tuple[Order, ...]:
    """An account's orders in the book, newest first: the open ones, today's session's, or the last
    ORDER_HISTORY of all (`orders all`)."""
    query = select(PaperOrder).where(PaperOrder.account == account).order_by(PaperOrder.id.desc())
    if scope == "open":
        query = query.where(PaperOrder.status == "open")
    elif scope == "today":
        query = query.where(PaperOrder.session_date == today)
    with Session(engine) as session:
        return tuple(order_view(session, r) for r in session.scalars(query.limit(ORDER_HISTORY)).all())


def order_view(session: Session, row: PaperOrder) -> Order:
    """An order of the book as the protocol gives it, with its fills."""
    fills = session.scalars(select(PaperFill).where(PaperFill.order_id == row.id).order_by(PaperFill.id)).all()
    return Order(row.id, row.client_order_id, row.account, row.ts_code, row.name, row.side,  # type: ignore[arg-type]
                 row.quantity, row.price_type,  # type: ignore[arg-type]
                 yuan(row.limit_price_fen) if row.limit_price_fen is not None else None, row.session_date,
                 row.fill_at, row.status, yuan(row.reserved_fen), row.thread_id,  # type: ignore[arg-type]
                 row.approved_by, row.reason, row.note, row.created_at.isoformat(), tuple(fill_view(f) for f in fills))


def fill_view(row: PaperFill) -> Fill:
    return Fill(row.id, row.order_id, row.ts_code, row.side, row.quantity, yuan(row.price_fen),  # type: ignore[arg-type]
                yuan(row.value_fen), yuan(row.commission_fen), yuan(row.stamp_duty_fen), yuan(row.transfer_fee_fen),
                yuan(row.handling_fee_fen), yuan(row.regulator_fee_fen), row.trade_date, row.basis)


def resolve_unknown(engine: Engine, account: str, order_id: int, outcome: str, price: Decimal | None, by: str,
                    rates: FeeRates) -> Order:
    """A trader's word on an order whose broker does not know it ("unknown"), after checking at the broker: it
    filled (wholly, at `price`), was cancelled, or never reached the broker. Recorded with who said it."""
    with write_lock(engine, account) as session:
        row = session.get(PaperOrder, order_id)
        if row is None or row.account != account:
            raise AccountError(_("there is no order {order} in account {account}").format(order=order_id,
                                                                                          account=account))
        if row.status != "unknown":
            raise AccountError(_("order {order} is not unknown: only an order its broker does not know is marked "
                                 "by hand").format(order=order_id))
        if outcome == "filled":
            if price is None or price <= 0:
                raise AccountError(_("say the price it filled at: resolve ORDER filled PRICE"))
            value = (price * row.quantity).quantize(Decimal("0.01"))
            today = datetime.now(SHANGHAI).date()
            fees = fill_fees(row.ts_code, row.side, value, today, rates)  # type: ignore[arg-type]
            session.add(PaperFill(order_id=row.id, account=account, ts_code=row.ts_code, side=row.side,
                                  quantity=row.quantity, price_fen=to_fen(price), value_fen=to_fen(value),
                                  commission_fen=to_fen(fees.commission), stamp_duty_fen=to_fen(fees.stamp_duty),
                                  transfer_fee_fen=to_fen(fees.transfer_fee),
                                  handling_fee_fen=to_fen(fees.handling_fee),
                                  regulator_fee_fen=to_fen(fees.regulator_fee), trade_date=today.strftime("%Y%m%d"),
                                  basis=MARKED[outcome].format(who=by)))
        row.status, row.note = OUTCOMES[outcome], MARKED[outcome].format(who=by)
        session.flush()
        record_event(session, row.client_order_id, account, f"marked {outcome}", by,
                     {"order_id": row.id, **({"price_fen": to_fen(price)} if price is not None else {})})
        return order_view(session, row)
