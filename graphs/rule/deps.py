"""What the rule workflow reads from the run's context: the order subgraph's needs plus its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from graphs.context import Models
from graphs.order.deps import OrderDeps
from tools.data.klines import KlineProvider


class RuleDeps(OrderDeps, Models, Protocol):
    klines: Callable[[str], KlineProvider] | None  # symbol -> the kline source that serves it
    holdout_fraction: float  # the last sessions of a backtest's period kept apart (tools/research/holdout.py)
    dsr_threshold: float  # the deflated Sharpe probability a schedule asks for (graphs/rule/honesty.py)
