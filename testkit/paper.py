"""The paper account as the order tests set it up and read it back: one configuration, the card an order run waits
on, and the account's events, orders and fills straight from the database."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from tools.broker.checks import RiskLimits
from tools.broker.fees import DEFAULT_RATES
from tools.broker.paper import PaperConfig
from tools.broker.records import OrderEvent, PaperFill, PaperOrder

CONFIG = PaperConfig(DEFAULT_RATES, RiskLimits(Decimal("500000"), Decimal("0.3"), Decimal("0.05")),
                     Decimal("1000000"), "open", 7, timedelta(minutes=120))


def interrupt_value(out: dict[str, Any]) -> dict[str, Any]:
    """The one interrupt a run stopped at: the card it shows."""
    (pending,) = out["__interrupt__"]
    return pending.value


def order_events(engine: Engine, account: str) -> list[tuple[str, str | None]]:
    with Session(engine) as session:
        rows = session.scalars(select(OrderEvent).where(OrderEvent.account == account).order_by(OrderEvent.id))
        return [(r.event, r.actor) for r in rows]


def paper_orders(engine: Engine, account: str) -> list[PaperOrder]:
    with Session(engine) as session:
        return list(session.scalars(select(PaperOrder).where(PaperOrder.account == account)))


def paper_fills(engine: Engine, account: str) -> list[PaperFill]:
    with Session(engine) as session:
        return list(session.scalars(select(PaperFill).where(PaperFill.account == account)))
