"""What the order workflow (and the order subgraph every trading workflow ends in) reads from the run's context."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from graphs.context import Market, Storage
from tools.broker.paper import PaperConfig
from tools.broker.protocol import Broker
from tools.rules.store import RuleStore


class OrderDeps(Market, Storage, Protocol):
    paper: PaperConfig | None  # the paper account's rates, limits and clock settings
    broker: Callable[[str, str | None], Broker] | None  # (account name, opened by) -> its broker
    traders: frozenset[str]  # who may approve or edit orders
    rules: RuleStore | None  # a rule's proposal claim is released when its card ends
    now: Callable[[], datetime]  # the wall clock
