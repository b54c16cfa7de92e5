"""What must be in the audit chains whatever they hold: a chain for every paper account and a chained event for
every paper order. A chain deleted whole, with its head and its rows, walks clean (there is nothing to walk): only
the state tables still name it."""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import Engine, and_, exists, select
from sqlalchemy.orm import Session

from tools.audit.chain import chain_of
from tools.audit.records import ChainEntry
from tools.broker.records import OrderEvent, PaperAccount, PaperOrder


def missing(engine: Engine, account: str | None = None) -> Iterator[str]:
    """One line per account without a chain and per order without a chained event (of `account` if given)."""
    chained = (select(ChainEntry.id).where(ChainEntry.source == "order_events", ChainEntry.source_id == OrderEvent.id)
               .exists())
    with Session(engine) as session:
        accounts = select(PaperAccount.name).order_by(PaperAccount.name)
        orders = select(PaperOrder.account, PaperOrder.client_order_id).order_by(PaperOrder.id)
        if account is not None:
            accounts, orders = accounts.where(PaperAccount.name == account), orders.where(PaperOrder.account == account)
        for name in session.scalars(accounts):
            if not session.scalar(select(exists().where(ChainEntry.chain == chain_of(name)))):
                yield (f"account {name} is in paper_accounts but has no audit chain: its chain was deleted, or the "
                       "account was created outside the audit trail")
        unproven = orders.where(~exists().where(and_(OrderEvent.client_order_id == PaperOrder.client_order_id,
                                                     OrderEvent.account == PaperOrder.account, chained)))
        for name, order in session.execute(unproven):
            yield (f"order {order} of account {name} is in paper_orders but no chained event records it: its events "
                   "were deleted, or it was written outside the audit trail")
