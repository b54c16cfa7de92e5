"""What the order workflow (and the order subgraph every trading workflow ends in) reads from the run's context."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Protocol

from graphs.context import Market, Roles, Storage
from tools.broker.accounts import Accounts
from tools.broker.config import TradingConfig
from tools.broker.protocol import Broker
from tools.rules.store import RuleStore


class OrderDeps(Market, Storage, Roles, Protocol):
    paper: TradingConfig | None  # the accounts' rates, limits and clock settings (None: no trading here)
    broker: Callable[[str, str | None], Broker] | None  # the account registry's opener: (account, opened by) -> broker
    second_approval_above: Decimal | None  # orders above this notional need two traders (None: off)
    stale_move: Decimal  # an approval on a price basis moved more than this re-checks the card
    rules: RuleStore | None  # a rule's proposal claim is released when its card ends

    @property
    def now(self) -> Callable[[], datetime]:  # the wall clock (a property: the context's callable field is read-only)
        ...


def broker_for(ctx: OrderDeps, account: str, by: str | None) -> Broker:
    """The account's broker, where an order card exists: `propose` makes none without a broker configured."""
    return accounts(ctx).broker(account, by)


def accounts(ctx: OrderDeps) -> Accounts:
    """Every account, each through its broker (tools/broker/accounts.py)."""
    return Accounts(ctx.engine, ctx.broker)
