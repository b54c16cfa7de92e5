"""Transactions on paper accounts: one writer per account at a time (a row lock on PostgreSQL, `BEGIN
IMMEDIATE` on SQLite), accounts created on first use, the trading switch, and the order audit trail."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tools.audit.chain import append
from tools.broker.money import to_fen
from tools.broker.records import CashEntry, OrderEvent, PaperAccount, TradingSwitch
from tools.storage.models import utcnow

SWITCH_ROW = 1


class AccountError(ValueError):
    """An account request that cannot be served (unknown account, bad name); the message says what to do."""


@contextmanager
def write_lock(engine: Engine, account: str | None = None) -> Iterator[Session]:
    """A session that holds the write lock of `account` (or of the database on SQLite) until it commits; no
    two writers interleave, so no cash update is lost."""
    with Session(engine, expire_on_commit=False) as session:
        if engine.dialect.name == "sqlite":
            session.connection().exec_driver_sql("BEGIN IMMEDIATE")
        elif account is not None:
            session.execute(select(PaperAccount.name).where(PaperAccount.name == account).with_for_update())
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def ensure_account(engine: Engine, name: str, starting_cash: Decimal, by: str | None) -> None:
    """Create the account with its starting cash unless it exists."""
    with Session(engine) as session:
        if session.get(PaperAccount, name) is not None:
            return
    try:
        with write_lock(engine) as session:
            if session.get(PaperAccount, name) is not None:
                return
            cash = to_fen(starting_cash)
            session.add(PaperAccount(name=name, starting_cash_fen=cash, cash_fen=cash, reserved_fen=0, created_by=by))
            session.flush()
            session.add(CashEntry(account=name, amount_fen=cash, balance_fen=cash, kind="deposit"))
            record_event(session, None, name, "account opened", by, {"starting_cash_fen": cash})
    except IntegrityError:  # another process opened it first
        return


def trading_enabled(session: Session) -> bool:
    row = session.get(TradingSwitch, SWITCH_ROW)
    return True if row is None else bool(row.enabled)


def set_trading(engine: Engine, enabled: bool, by: str, reason: str = "") -> None:
    """Switch trading on or off for every account; recorded in the audit trail with who and why."""
    with write_lock(engine) as session:
        row = session.get(TradingSwitch, SWITCH_ROW, with_for_update=not _sqlite(session))
        if row is None:
            session.add(TradingSwitch(id=SWITCH_ROW, enabled=enabled, changed_by=by, changed_at=utcnow()))
        else:
            row.enabled, row.changed_by, row.changed_at = enabled, by, utcnow()
        record_event(session, None, None, "trading on" if enabled else "trading off", by,
                     {"reason": reason.strip() or "no reason given"})


def switch_state(engine: Engine) -> tuple[bool, str | None, Any]:
    """(enabled, who changed it, when)."""
    with Session(engine) as session:
        row = session.get(TradingSwitch, SWITCH_ROW)
        return (True, None, None) if row is None else (row.enabled, row.changed_by, row.changed_at)


def last_switch(engine: Engine, event: str = "", since: datetime | None = None) -> tuple[str, str | None,
                                                                                    datetime, str] | None:
    """The latest switch change (`event`: only "trading off" or "trading on"; `since`: only after that time) as
    (event, who, when, why), or None."""
    events = (event,) if event else ("trading on", "trading off")
    query = select(OrderEvent).where(OrderEvent.event.in_(events), OrderEvent.account.is_(None))
    if since is not None:
        query = query.where(OrderEvent.at > since)
    with Session(engine) as session:
        row = session.scalars(query.order_by(OrderEvent.id.desc()).limit(1)).first()
        if row is None:
            return None
        at = row.at if row.at.tzinfo else row.at.replace(tzinfo=UTC)  # SQLite gives naive UTC back
        return row.event, row.actor, at, str((row.detail or {}).get("reason") or "no reason given")


def record_event(session: Session, client_order_id: str | None, account: str | None, event: str,
                 actor: str | None, detail: dict[str, Any]) -> None:
    """Add one entry to the order audit trail and append it to its chain (tools/audit/chain.py)."""
    row = OrderEvent(client_order_id=client_order_id, account=account, event=event, actor=actor, detail=detail,
                     at=utcnow())
    session.add(row)
    append(session, row)


def log_event(engine: Engine, client_order_id: str | None, account: str | None, event: str, actor: str | None,
              detail: dict[str, Any]) -> None:
    """An audit entry in its own transaction (proposals, decisions, refusals)."""
    with Session(engine) as session:
        record_event(session, client_order_id, account, event, actor, detail)
        session.commit()


def _sqlite(session: Session) -> bool:
    return session.get_bind().dialect.name == "sqlite"
