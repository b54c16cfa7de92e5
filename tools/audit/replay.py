"""State matches events: the chained order events of the paper accounts replayed into the state they produce, and
compared with the state tables (a row edited with SQL behind the chain's back is named: table, row, column, stored
vs replayed). Replayed: the trading switch, the simulated clock, the roles and console logins (seeded, granted,
revoked, mapped, unmapped), each account's mandate and cash, each order's status, session, side, code, quantity,
limit price and approvers, each fill's price, value, fees and day, and each position's quantity. Not replayed:
position cost and realised P&L (pro rata, left to the fills), the cash held back for open orders, the ledger's
lines and the daily marks."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from tools.access.records import ConsoleLogin, RoleGrant
from tools.audit.records import ChainEntry
from tools.broker.mandate import load_mandate
from tools.broker.records import (
    OrderEvent,
    PaperAccount,
    PaperFill,
    PaperOrder,
    PaperPosition,
    SimulatedClock,
    TradingSwitch,
)

STATUS = {"submitted": "open", "filled": "filled", "expired": "expired", "cancelled": "cancelled",
          # a live broker's (tools/broker/vnpy.py) and a trader's word on an order that broker does not know
          "rejected": "rejected", "unknown": "unknown", "marked filled": "filled", "marked cancelled": "cancelled",
          "marked unsent": "expired"}
ROLE_EVENTS = ("roles seeded", "role granted", "role revoked", "login mapped", "login unmapped")
FEES = ("commission_fen", "stamp_duty_fen", "transfer_fee_fen", "handling_fee_fen", "regulator_fee_fen")


@dataclass(frozen=True)
class Difference:
    table: str
    row: str
    column: str
    stored: Any
    replayed: Any

    def __str__(self) -> str:
        return f"{self.table} {self.row} {self.column}: stored {self.stored!r}, replayed {self.replayed!r}"


@dataclass
class _Order:
    fields: dict[str, Any] = field(default_factory=dict)  # column -> replayed value
    fill: dict[str, Any] | None = None


@dataclass
class _Account:
    cash_fen: int = 0
    mandate: list[str] | None = None  # None: no `mandate set` event
    orders: dict[str, _Order] = field(default_factory=dict)  # client order id -> replayed
    live: bool = False  # a live broker's: its cash, positions and fills are the broker's, not replayed here


@dataclass
class _State:
    switch: bool | None = None
    clock: tuple[str, str] | None = None
    grants: set[tuple[str, str, str]] = field(default_factory=set)  # (role, account, identity)
    logins: dict[str, str] = field(default_factory=dict)  # console login -> identity
    accounts: dict[str, _Account] = field(default_factory=dict)


def differences(engine: Engine, account: str | None = None) -> Iterator[Difference]:
    """Every stored value that differs from the replay: the global state (without `account`) and each paper
    account's (a row of paper_accounts; only `account`'s with one)."""
    with Session(engine) as session:
        state = _replay(session)
        if account is None:
            yield from _global(session, state)
        names = session.scalars(select(PaperAccount.name).order_by(PaperAccount.name)).all()
        for name in [n for n in names if account is None or n == account]:
            yield from _account(session, name, state.accounts.get(name, _Account()))


def _chained_events(session: Session) -> Iterator[Any]:
    """The order events that are in a chain (rows, not objects: a replay reads 100,000s), in the order they were
    chained."""
    events = OrderEvent.__table__
    query = (select(events.c.event, events.c.account, events.c.client_order_id, events.c.actor, events.c.detail)
             .join(ChainEntry, (ChainEntry.source == "order_events") & (ChainEntry.source_id == events.c.id))
             .order_by(ChainEntry.at, ChainEntry.chain, ChainEntry.seq))
    yield from session.execute(query)


def _replay(session: Session) -> _State:
    state = _State()
    for event in _chained_events(session):
        detail = event.detail or {}
        if event.event in ("trading on", "trading off"):
            state.switch = event.event == "trading on"
        elif event.event == "clock moved":
            state.clock = (str(detail.get("to")), str(detail.get("data_end")))
        elif event.event in ROLE_EVENTS:
            _role(state, event.event, detail)
        elif event.account:
            _apply(state.accounts.setdefault(event.account, _Account()), event, detail)
    return state


def _role(state: _State, event: str, detail: dict[str, Any]) -> None:
    if event == "roles seeded":
        state.grants = {(str(r), str(a), str(i)) for r, a, i in detail.get("grants") or []}
        state.logins = {str(login): str(who) for login, who in (detail.get("logins") or {}).items()}
    elif event in ("role granted", "role revoked"):
        grant = (str(detail.get("role")), str(detail.get("account") or ""), str(detail.get("identity")))
        if event == "role granted":
            state.grants.add(grant)
        else:
            state.grants.discard(grant)
    elif event == "login mapped":
        state.logins[str(detail.get("login"))] = str(detail.get("identity"))
    else:
        state.logins.pop(str(detail.get("login")), None)


def _apply(account: _Account, event: Any, detail: dict[str, Any]) -> None:
    if event.event in ("account opened", "account reset"):
        account.cash_fen, account.orders = int(detail["starting_cash_fen"]), {}
        return
    if event.event == "mandate set":
        account.mandate = list(detail.get("after") or [])
        return
    if not event.client_order_id:
        return
    order = account.orders.setdefault(event.client_order_id, _Order())
    if event.event == "proposed" and isinstance(detail.get("request"), dict):
        request = detail["request"]
        order.fields.update({k: request[k] for k in ("ts_code", "side", "quantity") if k in request})
        if "price_type" in request:
            order.fields["limit_price_fen"] = _fen(request.get("limit_price"))
    elif event.event == "edited":
        order.fields["quantity"] = detail.get("quantity")
        order.fields["limit_price_fen"] = _fen(detail.get("limit_price"))
    elif event.event == "submitted":
        order.fields.update(status="open", session_date=detail.get("session"), approved_by=event.actor)
        account.live = account.live or detail.get("broker") == "vnpy"
    elif event.event == "rolled":
        order.fields["session_date"] = detail.get("to")
    elif event.event in STATUS and "status" in order.fields:
        order.fields["status"] = STATUS[event.event]
        if event.event == "filled" and not account.live:
            order.fill = {k: detail.get(k) for k in ("price_fen", "value_fen", "fees_fen", "trade_date")}
            value, fees = int(detail.get("value_fen") or 0), int(detail.get("fees_fen") or 0)
            account.cash_fen += value - fees if order.fields.get("side") == "sell" else -(value + fees)


def _fen(price: Any) -> int | None:
    return None if price in (None, "") else int((Decimal(str(price)) * 100).to_integral_value())


def _global(session: Session, state: _State) -> Iterator[Difference]:
    switch = session.scalars(select(TradingSwitch)).first()
    stored_on = True if switch is None else bool(switch.enabled)
    replayed_on = True if state.switch is None else state.switch
    if stored_on != replayed_on:
        yield Difference("trading_switch", "1", "enabled", stored_on, replayed_on)
    clock = session.scalars(select(SimulatedClock)).first()
    stored = (clock.session_date, clock.data_end) if clock is not None else None
    if stored != state.clock:
        for index, column in enumerate(("session_date", "data_end")):
            before, after = (stored or (None, None))[index], (state.clock or (None, None))[index]
            if before != after:
                yield Difference("simulated_clock", "1", column, before, after)
    yield from _roles(session, state)


def _roles(session: Session, state: _State) -> Iterator[Difference]:
    """A grant or a login written behind the `roles` command's back (or removed) is named by its key."""
    grants = {(g.role, g.account, g.identity) for g in session.scalars(select(RoleGrant))}
    for role, account, identity in sorted(grants ^ state.grants):
        present = (role, account, identity) in grants
        yield Difference("role_grants", f"{role} {account or '*'} {identity}", "(row)",
                         "present" if present else None, None if present else "present")
    logins = {row.login: row.identity for row in session.scalars(select(ConsoleLogin))}
    for login in sorted(set(logins) | set(state.logins)):
        if logins.get(login) != state.logins.get(login):
            yield Difference("console_logins", login, "identity", logins.get(login), state.logins.get(login))


def _account(session: Session, name: str, replayed: _Account) -> Iterator[Difference]:
    row = session.get(PaperAccount, name)
    if row is not None and row.cash_fen != replayed.cash_fen:
        yield Difference("paper_accounts", name, "cash_fen", row.cash_fen, replayed.cash_fen)
    mandate = load_mandate(session, name)
    stored_lines = mandate.record() if mandate is not None else []
    if stored_lines != (replayed.mandate or []):
        yield Difference("paper_mandates", name, "lines", stored_lines, replayed.mandate or [])
    orders = {o.client_order_id: o for o in session.scalars(select(PaperOrder).where(PaperOrder.account == name))}
    fills = {f.order_id: f for f in session.scalars(select(PaperFill).where(PaperFill.account == name))}
    held: dict[str, int] = {}
    for cid, order in sorted(replayed.orders.items()):
        if "status" not in order.fields:
            continue  # never submitted: no order row
        stored = orders.get(cid)
        if stored is None:
            yield Difference("paper_orders", cid, "(row)", None, "present")
            continue
        for column, value in order.fields.items():
            if getattr(stored, column) != value:
                yield Difference("paper_orders", cid, column, getattr(stored, column), value)
        if replayed.live:  # the broker's fills: each a chained `fill` event, not one replayed fill
            continue
        yield from _fill(cid, fills.get(stored.id), order.fill)
        if order.fields["status"] == "filled":
            sign = -1 if order.fields.get("side") == "sell" else 1
            held[order.fields["ts_code"]] = held.get(order.fields["ts_code"], 0) + sign * int(order.fields["quantity"])
    for cid in sorted(set(orders) - {c for c, o in replayed.orders.items() if "status" in o.fields}):
        yield Difference("paper_orders", cid, "(row)", "present", None)
    if replayed.live:
        return
    positions = {p.ts_code: p.quantity for p in session.scalars(select(PaperPosition).where(
        PaperPosition.account == name))}
    for code in sorted(set(positions) | set(held)):
        if positions.get(code, 0) != held.get(code, 0):
            yield Difference("paper_positions", f"{name} {code}", "quantity", positions.get(code), held.get(code, 0))


def _fill(cid: str, stored: PaperFill | None, replayed: dict[str, Any] | None) -> Iterator[Difference]:
    if stored is None or replayed is None:
        if (stored is None) != (replayed is None):
            yield Difference("paper_fills", f"of {cid}", "(row)", None if stored is None else "present",
                             None if replayed is None else "present")
        return
    values = {"price_fen": stored.price_fen, "value_fen": stored.value_fen, "trade_date": stored.trade_date,
              "fees_fen": sum(getattr(stored, name) for name in FEES)}
    for column, value in values.items():
        if value != replayed[column]:
            yield Difference("paper_fills", f"of {cid}", column, value, replayed[column])
