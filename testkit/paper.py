"""The paper account as the order tests set it up and read it back: one configuration, a workflow context whose
accounts are paper accounts of it, the card an order run waits on, and the account's events, orders and fills
straight from the database."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from graphs.context import WorkflowContext
from tools.broker.checks import RiskLimits
from tools.broker.fees import DEFAULT_RATES
from tools.broker.paper import PaperBroker, PaperConfig
from tools.broker.records import OrderEvent, PaperFill, PaperOrder
from tools.data.provider import MarketDataProvider
from tools.rules.store import RuleStore
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore

CONFIG = PaperConfig(DEFAULT_RATES, RiskLimits(Decimal("500000"), Decimal("0.3"), Decimal("0.05")),
                     Decimal("1000000"), "open", 7, timedelta(minutes=120))


def paper_context(engine: Engine, sandbox: Sandbox, provider: MarketDataProvider, *, traders: Collection[str],
                  admins: Collection[str], now: datetime | None = None, rules: bool = False) -> WorkflowContext:
    """A workflow context whose accounts are paper accounts of CONFIG; `now`: a fixed clock for it and its
    accounts; `rules`: with a rule store (no rule admins)."""
    clock = (lambda: now) if now is not None else None
    return WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                           paper=CONFIG, traders=frozenset(traders), admins=frozenset(admins),
                           broker=lambda name, by: PaperBroker(engine, provider, name, CONFIG, opened_by=by, now=clock),
                           rules=RuleStore(engine, frozenset()) if rules else None,
                           **({"now": clock} if clock is not None else {}))


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
