"""The account registry: which broker serves which account, and the desk's reads over every account. Adding a
broker is one module in tools/broker/ with an `open_broker(env, account, opened_by)` function, and one line in
`REGISTERED`. The modules load on first use, so a broker whose packages are not installed (VeighNa is optional)
costs nothing until an account names it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from tools.broker.book import account_names, accounts_with_open_orders, order_account, tagged_position
from tools.broker.config import TradingConfig
from tools.broker.orders import Order
from tools.broker.protocol import Broker
from tools.data.provider import MarketDataProvider

REGISTERED: dict[str, str] = {  # QUANTDESK_BROKER's words: the module serving accounts of that kind
    "paper": "tools.broker.paper",
    "vnpy": "tools.broker.vnpy",
}

OpenBroker = Callable[[str, str | None], Broker]  # (account name, opened by) -> the account's broker


@dataclass(frozen=True)
class BrokerEnv:
    """What a broker module is opened with."""

    engine: Engine
    provider: MarketDataProvider
    config: TradingConfig
    settings: Any  # tools.settings.Settings: the broker's own variables (QUANTDESK_VNPY_…)
    now: Callable[[], datetime] | None = None


def broker_kind(settings: Any, account: str) -> str:
    """The kind of broker serving `account`: its own (QUANTDESK_BROKER_ACCOUNTS), else QUANTDESK_BROKER."""
    return str(settings.broker_accounts.get(account, settings.broker))


def open_registered(kind: str, env: BrokerEnv, account: str, opened_by: str | None) -> Broker:
    """An account's broker of a registered kind."""
    module = importlib.import_module(REGISTERED[kind])
    broker: Broker = module.open_broker(env, account, opened_by)
    return broker


def start_problems(env: BrokerEnv) -> list[str]:
    """What each broker kind the settings use says is wrong at start (a live server that does not answer), one
    line each; a module without `start_problem` has none."""
    kinds = {env.settings.broker, *env.settings.broker_accounts.values()}
    lines = []
    for kind in sorted(kinds):
        check = getattr(importlib.import_module(REGISTERED[kind]), "start_problem", None)
        problem = check(env) if check is not None else None
        if problem:
            lines.append(problem)
    return lines


@dataclass(frozen=True)
class SettingsBrokers:
    """The opener the settings describe: each account's broker of its kind (`kind` says which, opening nothing)."""

    env: BrokerEnv

    def __call__(self, account: str, opened_by: str | None) -> Broker:
        return open_registered(self.kind(account), self.env, account, opened_by)

    def kind(self, account: str) -> str:
        return broker_kind(self.env.settings, account)


def brokers_from_settings(env: BrokerEnv) -> SettingsBrokers:
    return SettingsBrokers(env)


class Accounts:
    """Every account, each reached through its broker."""

    def __init__(self, engine: Engine, open_broker: OpenBroker | None) -> None:
        self.engine, self._opener = engine, open_broker

    def broker(self, account: str, opened_by: str | None = None) -> Broker:
        return self._open(account, opened_by)

    def _open(self, account: str, opened_by: str | None) -> Broker:
        if self._opener is None:
            raise LookupError("no broker is configured")
        return self._opener(account, opened_by)

    def names(self) -> list[str]:
        """The accounts the desk's book knows, whichever broker serves them."""
        return account_names(self.engine)

    def order_account(self, order_id: int) -> str | None:
        return order_account(self.engine, order_id)

    def settle(self, now: datetime | None = None) -> list[Order]:
        """Every account with open orders brought up to date (see Broker.settle)."""
        changed: list[Order] = []
        for name in accounts_with_open_orders(self.engine):
            changed += self._open(name, None).settle(now)
        return changed

    def halt(self, by: str) -> list[Order]:
        """Trading switched off: each account's broker cancels what must not fill now (see Broker.halt)."""
        changed: list[Order] = []
        for name in accounts_with_open_orders(self.engine):
            changed += self._open(name, None).halt(by)
        return changed

    def tagged_position(self, account: str, code: str, tag: str) -> tuple[int, int]:
        """(shares held, open orders) of what `tag`'s orders did in the account's `code` (a proposer's position)."""
        return tagged_position(self.engine, account, code, tag)
